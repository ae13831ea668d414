// NumPy .npy / .npz reading and writing, for FID statistics (mu, sigma as
// float64) and ADM-style sample batches (uint8 [N, H, W, 3], key "arr_0").
//
// Format: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
// (.npy versions 1.0, 2.0 and 3.0 are read; 1.0 is written, header padded so
// the data start at a multiple of 64 bytes, as numpy does). An .npz is a zip
// archive of "<key>.npy" members, stored (np.savez) or deflated
// (np.savez_compressed); zip handling through libzip.
//
// Dtypes: "|u1" (uint8), "<f4" (float32), "<f8" (float64), "<i4" (int32),
// "<i8" (int64); "|b1" (bool) is read as one byte per element. Only C order:
// 'fortran_order': True and big-endian arrays are rejected.
//
// Errors are std::runtime_error naming the file (and the member inside an
// npz): missing file, not a zip archive, bad magic, truncated header,
// unparsable header dict, unsupported dtype, shape whose element count,
// strides or byte count overflow int64 (even with zero elements,
// vt::check_shape_fits), shape whose byte count differs from the data present. Writes are atomic (core/atomic_file.h)
// and reproducible: every member carries the fixed time 1980-01-01 00:00 (numpy
// writes the current time), so the same arrays give the same bytes.
#pragma once
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vt {

struct NpyArray {
  std::string dtype = "<f4";  // numpy descr: "|u1", "<f4", "<f8", "<i4", "<i8", "|b1"
  Shape shape;
  std::vector<uint8_t> bytes;  // C order, little-endian

  int64_t numel() const { return shape_numel(shape); }
  size_t itemsize() const;

  // Copies the data out as T after checking that T matches dtype
  // (uint8_t "|u1", float "<f4", double "<f8", int32_t "<i4", int64_t "<i8").
  template <typename T>
  std::vector<T> as() const;
  // Any supported dtype converted to double (e.g. statistics that may be
  // stored as float32 or float64).
  std::vector<double> to_f64() const;

  template <typename T>
  static NpyArray from(const std::vector<T>& values, const Shape& shape);
  // F32 -> "<f4", U8 -> "|u1", I32 -> "<i4", I64 -> "<i8" (any device, any strides).
  static NpyArray from_tensor(const Tensor& t);
  // "<f4"/"|u1"/"<i4"/"<i8" to a CPU tensor of the matching dtype; "<f8" to F32.
  Tensor to_tensor() const;
};

// Descr of T ("<f4" for float, ...); a compile error for other types.
template <typename T>
const char* npy_descr();
template <> inline const char* npy_descr<uint8_t>() { return "|u1"; }
template <> inline const char* npy_descr<float>() { return "<f4"; }
template <> inline const char* npy_descr<double>() { return "<f8"; }
template <> inline const char* npy_descr<int32_t>() { return "<i4"; }
template <> inline const char* npy_descr<int64_t>() { return "<i8"; }

// `what` names the source in error messages (file, or "file:member").
NpyArray parse_npy(const void* data, size_t size, const std::string& what);
std::string serialize_npy(const NpyArray& a);
// The npy 1.0 preamble and header serialize_npy writes before the data.
std::string npy_header(const std::string& dtype, const Shape& shape);

// The header of an .npy alone, for readers that stream the data after it
// (core/npz_image_reader.h): the same checks as parse_npy except the data
// size. `size` may stop anywhere after the header.
struct NpyHeader {
  std::string dtype;         // normalized descr, as NpyArray::dtype
  Shape shape;
  size_t data_offset = 0;    // bytes from the start of the .npy to the data
  uint64_t data_bytes = 0;   // numel x itemsize
};
NpyHeader parse_npy_header(const void* data, size_t size, const std::string& what);
// Bytes of magic, version, length field and header dict, from the first
// (at least 10, 12 for versions 2 and 3) bytes; throws on bad magic or version.
size_t npy_header_size(const void* preamble, size_t size, const std::string& what);

NpyArray load_npy(const std::string& path);
void save_npy(const std::string& path, const NpyArray& a);

// Keys are the member names without ".npy".
std::map<std::string, NpyArray> load_npz(const std::string& path);
void save_npz(const std::string& path, const std::map<std::string, NpyArray>& arrays, bool compress = false);

template <typename T>
std::vector<T> NpyArray::as() const {
  if (dtype != npy_descr<T>())
    throw std::invalid_argument("NpyArray::as: array has dtype '" + dtype + "', asked for '" + npy_descr<T>() + "'");
  std::vector<T> out(static_cast<size_t>(numel()));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

template <typename T>
NpyArray NpyArray::from(const std::vector<T>& values, const Shape& shape) {
  if (static_cast<int64_t>(values.size()) != shape_numel(shape))
    throw std::invalid_argument("NpyArray::from: " + std::to_string(values.size()) + " values for shape " +
                                shape_str(shape));
  NpyArray a;
  a.dtype = npy_descr<T>();
  a.shape = shape;
  a.bytes.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(a.bytes.data(), values.data(), a.bytes.size());
  return a;
}

}  // namespace vt
