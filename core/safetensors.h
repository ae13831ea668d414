// safetensors reading and writing (https://github.com/huggingface/safetensors,
// format described in its README):
//
//   [8 bytes] N, little-endian uint64
//   [N bytes] JSON object {name: {"dtype": "F32", "shape": [..],
//             "data_offsets": [begin, end]}, "__metadata__": {str: str}}
//   [rest]    tensor bytes; offsets are relative to the start of this region
//
// Supported dtypes: F32, BF16, F16, I64, I32, U8 (vt::DType). Loaded tensors
// are contiguous CPU tensors.
//
// Every malformed file is a std::runtime_error whose message starts with
// "safetensors '<path>': " and names the tensor when one is at fault: a file
// shorter than 8 bytes, a header length beyond the file or above 100 MB, a
// header that is not a JSON object, an entry without dtype/shape/offsets, an
// unknown dtype, offsets with begin > end or outside the data region, a shape
// whose element count, strides or byte count overflow int64 (even with zero
// elements, vt::check_shape_fits), a byte count that differs from
// prod(shape) * dtype size, overlapping tensors. All
// checks happen before any tensor byte is read, so no read goes out of bounds.
//
// Writing follows the Python library (safetensors 0.4+) byte for byte: tensors
// ordered by dtype alignment (I64, F32, I32, BF16, F16, U8) then by name, so
// every tensor is aligned to its element size; compact JSON with keys in the
// order dtype, shape, data_offsets; header padded with spaces to a multiple of
// 8. Files are written atomically (core/atomic_file.h).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace vt {

using SafetensorsMetadata = std::map<std::string, std::string>;

struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte offsets relative to the data region
};

// Parses and validates the header once; tensors are then read one at a time
// (only the bytes of that tensor), e.g. to load a single tensor of a large
// checkpoint.
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);

  const std::string& path() const { return path_; }
  const SafetensorsMetadata& metadata() const { return metadata_; }
  // Entries in file order (ascending data offset).
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  std::vector<std::string> names() const;
  bool contains(const std::string& name) const;
  // Throws std::out_of_range naming the file and the tensor when absent.
  const SafetensorsEntry& entry(const std::string& name) const;
  Tensor load(const std::string& name) const;

 private:
  std::string path_;
  uint64_t data_start_ = 0;
  SafetensorsMetadata metadata_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, size_t> index_;
};

std::map<std::string, Tensor> load_safetensors(const std::string& path, SafetensorsMetadata* metadata = nullptr);

// Tensors may live on any device and be non-contiguous (copied to CPU first).
// Duplicate or empty names throw std::invalid_argument. (From a std::map m:
// pass {m.begin(), m.end()}.)
void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, Tensor>>& tensors,
                      const SafetensorsMetadata& metadata = {});

// The serialized bytes save_safetensors writes (for tests and in-memory use).
std::string serialize_safetensors(const std::vector<std::pair<std::string, Tensor>>& tensors,
                                  const SafetensorsMetadata& metadata = {});

}  // namespace vt
