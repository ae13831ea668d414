#include "core/tensor.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "core/allocator.h"
#include "core/out_of_memory.h"

#ifdef VT_CUDA
#include <cuda_runtime.h>
#endif

namespace vt {

std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << "[";
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << "]";
  return o.str();
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

void check_shape_fits(const Shape& shape, size_t itemsize) {
  int64_t acc = static_cast<int64_t>(itemsize);
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_str(shape));
    if (__builtin_mul_overflow(acc, std::max<int64_t>(d, 1), &acc))
      throw std::invalid_argument("shape " + shape_str(shape) + " overflows int64: its element count, strides or " +
                                  std::to_string(itemsize) + "-byte elements do not fit");
  }
}

// Callers have passed check_shape_fits, so no product overflows.
Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  int64_t acc = 1;
  for (int i = static_cast<int>(shape.size()) - 1; i >= 0; --i) {
    st[i] = acc;
    acc *= shape[i];
  }
  return st;
}

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
  data_ = device.is_cpu() ? cpu_alloc(bytes) : cuda_alloc(bytes, device.index);
}

Storage::Storage(void* external, size_t bytes, Device device, std::shared_ptr<void> owner)
    : data_(external), bytes_(bytes), device_(device), owned_(false), owner_(std::move(owner)) {}

Storage::~Storage() {
  if (!owned_) return;
  if (device_.is_cpu()) cpu_free(data_);
  else cuda_free(data_, device_.index);
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  check_shape_fits(shape, dtype_size(dtype));
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  try {
    t.storage_ = std::make_shared<Storage>(static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device);
  } catch (const std::bad_alloc& e) {
    // What was asked for: a bare "std::bad_alloc" (e.g. model.img_size=4096)
    // leaves the user guessing.
    throw OutOfMemory(std::string(e.what()) + " for a " + dtype_name(dtype) + " tensor of shape " + shape_str(shape) +
                      " on " + device.str());
  }
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  Tensor t = empty(shape, dtype, device);
  t.zero();
  return t;
}

Tensor Tensor::full(const Shape& shape, float value, Device device) {
  Tensor t = empty(shape, DType::F32, device);
  t.fill(value);
  return t;
}

Tensor Tensor::from_vector(const std::vector<float>& v, const Shape& shape) {
  if (static_cast<int64_t>(v.size()) != shape_numel(shape))
    throw std::invalid_argument("from_vector: " + std::to_string(v.size()) + " values for shape " + shape_str(shape));
  Tensor t = empty(shape);
  if (!v.empty()) std::memcpy(t.raw(), v.data(), v.size() * sizeof(float));
  return t;
}

Tensor Tensor::wrap(void* data, const Shape& shape, DType dtype, Device device) {
  return wrap(data, shape, dtype, device, nullptr);
}

Tensor Tensor::wrap(void* data, const Shape& shape, DType dtype, Device device, std::shared_ptr<void> owner) {
  check_shape_fits(shape, dtype_size(dtype));
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.device_ = device;
  t.storage_ = std::make_shared<Storage>(data, static_cast<size_t>(shape_numel(shape)) * dtype_size(dtype), device,
                                         std::move(owner));
  return t;
}

int64_t Tensor::size(int d) const {
  int n = dim();
  if (d < 0) d += n;
  if (d < 0 || d >= n) throw std::invalid_argument("size(" + std::to_string(d) + ") of tensor with shape " + shape_str(shape_));
  return shape_[d];
}

bool Tensor::is_contiguous() const {
  int64_t acc = 1;
  for (int i = dim() - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != acc) return false;
    acc *= shape_[i];
  }
  return true;
}

void* Tensor::raw() const {
  if (!storage_) return nullptr;
  return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(dtype_size(dtype_));
}

static void expect_dtype(const Tensor& t, DType want) {
  if (t.dtype() != want)
    throw std::invalid_argument(std::string("expected dtype ") + dtype_name(want) + ", got " + t.str());
}
float* Tensor::f32() const { expect_dtype(*this, DType::F32); return data<float>(); }
int32_t* Tensor::i32() const { expect_dtype(*this, DType::I32); return data<int32_t>(); }
uint8_t* Tensor::u8() const { expect_dtype(*this, DType::U8); return data<uint8_t>(); }
uint16_t* Tensor::bf16() const { expect_dtype(*this, DType::BF16); return data<uint16_t>(); }

Tensor Tensor::view(const Shape& new_shape) const {
  if (!is_contiguous()) throw std::invalid_argument("view of non-contiguous tensor " + str());
  Shape s = new_shape;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      if (infer >= 0) throw std::invalid_argument("view: more than one -1 in " + shape_str(new_shape));
      infer = static_cast<int>(i);
    } else if (s[i] < 0 || __builtin_mul_overflow(known, s[i], &known)) {
      throw std::invalid_argument("view: cannot view " + shape_str(shape_) + " as " + shape_str(new_shape));
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel() % known != 0)
      throw std::invalid_argument("view: cannot view " + shape_str(shape_) + " as " + shape_str(new_shape));
    s[infer] = numel() / known;
  }
  if (shape_numel(s) != numel())
    throw std::invalid_argument("view: cannot view " + shape_str(shape_) + " as " + shape_str(new_shape));
  check_shape_fits(s, dtype_size(dtype_));
  Tensor t = *this;
  t.shape_ = s;
  t.strides_ = contiguous_strides(s);
  return t;
}

Tensor Tensor::slice(int d, int64_t start, int64_t end) const {
  if (d < 0) d += dim();
  if (d < 0 || d >= dim() || start < 0 || end > shape_[d] || start > end)
    throw std::invalid_argument("slice(" + std::to_string(d) + ", " + std::to_string(start) + ", " + std::to_string(end) +
                                ") of " + shape_str(shape_));
  Tensor t = *this;
  t.offset_ += start * strides_[d];
  t.shape_[d] = end - start;
  return t;
}

Tensor Tensor::select(int d, int64_t index) const {
  if (d < 0) d += dim();
  if (d < 0 || d >= dim() || index < 0 || index >= shape_[d])
    throw std::invalid_argument("select(" + std::to_string(d) + ", " + std::to_string(index) + ") of " + shape_str(shape_));
  Tensor t = *this;
  t.offset_ += index * strides_[d];
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return t;
}

Tensor Tensor::transpose(int d0, int d1) const {
  if (d0 < 0) d0 += dim();
  if (d1 < 0) d1 += dim();
  if (d0 < 0 || d1 < 0 || d0 >= dim() || d1 >= dim())
    throw std::invalid_argument("transpose of " + shape_str(shape_));
  Tensor t = *this;
  std::swap(t.shape_[d0], t.shape_[d1]);
  std::swap(t.strides_[d0], t.strides_[d1]);
  return t;
}

// Element-wise strided copy between two CPU views of the same dtype.
// Element-by-element copy between two host views of `shape` (strides in
// elements, es bytes per element).
static void strided_copy_bytes(char* dbase, const Shape& dst_strides, const char* sbase, const Shape& src_strides,
                               const Shape& shape, size_t es) {
  const int64_t n = shape_numel(shape);
  const int nd = static_cast<int>(shape.size());
  std::vector<int64_t> idx(nd, 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t so = 0, doff = 0;
    for (int k = 0; k < nd; ++k) {
      so += idx[k] * src_strides[k];
      doff += idx[k] * dst_strides[k];
    }
    std::memcpy(dbase + doff * static_cast<int64_t>(es), sbase + so * static_cast<int64_t>(es), es);
    for (int k = nd - 1; k >= 0; --k) {
      if (++idx[k] < shape[k]) break;
      idx[k] = 0;
    }
  }
}

static void cpu_strided_copy(const Tensor& dst, const Tensor& src) {
  const size_t es = dtype_size(src.dtype());
  const int64_t n = src.numel();
  if (n == 0) return;
  if (dst.is_contiguous() && src.is_contiguous()) {
    std::memcpy(dst.raw(), src.raw(), static_cast<size_t>(n) * es);
    return;
  }
  strided_copy_bytes(static_cast<char*>(dst.raw()), dst.strides(), static_cast<const char*>(src.raw()), src.strides(),
                     src.shape(), es);
}

#ifdef VT_CUDA
namespace {

void cuda_copy(void* d, const void* s, size_t n, cudaMemcpyKind kind) {
  cudaError_t e = cudaMemcpy(d, s, n, kind);
  if (e != cudaSuccess) throw std::runtime_error(std::string("cudaMemcpy failed: ") + cudaGetErrorString(e));
}

// Elements from element 0 of a view to its last element, inclusive (strides
// of views are never negative).
int64_t span_elements(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t last = 0;
  for (int k = 0; k < t.dim(); ++k) last += (t.shape()[k] - 1) * t.strides()[k];
  return last + 1;
}

// copy_from where a CUDA side is non-contiguous, staged through host memory:
// the view's storage span is copied whole and gathered/scattered on the
// host. No kernel is involved, so this core layer stays free of the op
// library; it synchronises the device and is meant for small, rare copies
// (the class token of vit.cpp, slices in tests), not for a training step's
// hot path. The source is never recursed on (copy_from -> contiguous ->
// clone -> copy_from used to loop forever for a strided CUDA source).
void staged_strided_copy(const Tensor& dst, const Tensor& src) {
  const size_t es = dtype_size(src.dtype());
  const int64_t n = src.numel();
  if (n == 0) return;
  const Shape& shape = src.shape();
  const Shape packed = contiguous_strides(shape);
  // 1. The source's elements, packed in row-major order on the host.
  std::vector<char> host(static_cast<size_t>(n) * es);
  if (src.device().is_cpu()) {
    strided_copy_bytes(host.data(), packed, static_cast<const char*>(src.raw()), src.strides(), shape, es);
  } else if (src.is_contiguous()) {
    cuda_copy(host.data(), src.raw(), host.size(), cudaMemcpyDeviceToHost);
  } else {
    std::vector<char> span(static_cast<size_t>(span_elements(src)) * es);
    cuda_copy(span.data(), src.raw(), span.size(), cudaMemcpyDeviceToHost);
    strided_copy_bytes(host.data(), packed, span.data(), src.strides(), shape, es);
  }
  // 2. Into the destination view.
  if (dst.device().is_cpu()) {
    strided_copy_bytes(static_cast<char*>(dst.raw()), dst.strides(), host.data(), packed, shape, es);
  } else if (dst.is_contiguous()) {
    cuda_copy(dst.raw(), host.data(), host.size(), cudaMemcpyHostToDevice);
  } else {
    // Read-modify-write of the span: the elements between the view's ones
    // are written back with the values they had.
    std::vector<char> span(static_cast<size_t>(span_elements(dst)) * es);
    cuda_copy(span.data(), dst.raw(), span.size(), cudaMemcpyDeviceToHost);
    strided_copy_bytes(span.data(), dst.strides(), host.data(), packed, shape, es);
    cuda_copy(dst.raw(), span.data(), span.size(), cudaMemcpyHostToDevice);
  }
}

}  // namespace
#endif

void Tensor::copy_from(const Tensor& src) {
  if (src.shape_ != shape_)
    throw std::invalid_argument("copy_from: shape " + shape_str(src.shape_) + " into " + shape_str(shape_));
  if (src.dtype_ != dtype_) {
    if (!device_.is_cpu() || !src.device_.is_cpu())
      throw std::invalid_argument("copy_from: dtype conversion only on CPU (" + src.str() + " -> " + str() + ")");
    copy_from(src.to(dtype_));
    return;
  }
  if (device_.is_cpu() && src.device_.is_cpu()) {
    cpu_strided_copy(*this, src);
    return;
  }
#ifdef VT_CUDA
  if (!is_contiguous() || !src.is_contiguous()) {
    staged_strided_copy(*this, src);
    return;
  }
  cudaMemcpyKind kind = src.device_.is_cpu() ? cudaMemcpyHostToDevice
                        : device_.is_cpu()   ? cudaMemcpyDeviceToHost
                                             : cudaMemcpyDeviceToDevice;
  // Device to device: the async form on the compute stream, which is what
  // cudaMemcpy does there (no host wait) and what a CUDA Graph can capture.
  cudaError_t e = kind == cudaMemcpyDeviceToDevice ? cudaMemcpyAsync(raw(), src.raw(), nbytes(), kind, nullptr)
                                                   : cudaMemcpy(raw(), src.raw(), nbytes(), kind);
  if (e != cudaSuccess) throw std::runtime_error(std::string("cudaMemcpy failed: ") + cudaGetErrorString(e));
#else
  throw std::runtime_error("copy_from: CUDA tensor in a build without CUDA");
#endif
}

Tensor Tensor::clone() const {
  Tensor t = empty(shape_, dtype_, device_);
  t.copy_from(*this);
  return t;
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::to(Device device) const {
  if (device == device_) return *this;
  Tensor t = empty(shape_, dtype_, device);
  t.copy_from(contiguous());
  return t;
}

static float load_as_f32(const void* p, DType dt) {
  switch (dt) {
    case DType::F32: return *static_cast<const float*>(p);
    case DType::BF16: return bf16_to_f32(*static_cast<const uint16_t*>(p));
    case DType::F16: return f16_to_f32(*static_cast<const uint16_t*>(p));
    case DType::I64: return static_cast<float>(*static_cast<const int64_t*>(p));
    case DType::I32: return static_cast<float>(*static_cast<const int32_t*>(p));
    case DType::U8: return static_cast<float>(*static_cast<const uint8_t*>(p));
  }
  return 0.f;
}

static void store_from_f32(void* p, DType dt, float v) {
  switch (dt) {
    case DType::F32: *static_cast<float*>(p) = v; break;
    case DType::BF16: *static_cast<uint16_t*>(p) = f32_to_bf16(v); break;
    case DType::F16: *static_cast<uint16_t*>(p) = f32_to_f16(v); break;
    case DType::I64: *static_cast<int64_t*>(p) = static_cast<int64_t>(v); break;
    case DType::I32: *static_cast<int32_t*>(p) = static_cast<int32_t>(v); break;
    case DType::U8: *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v < 0.f ? 0.f : (v > 255.f ? 255.f : v)); break;
  }
}

Tensor Tensor::to(DType dtype) const {
  if (dtype == dtype_) return *this;
  if (!device_.is_cpu()) return to(Device::cpu()).to(dtype).to(device_);
  Tensor src = contiguous();
  Tensor t = empty(shape_, dtype, device_);
  const size_t si = dtype_size(dtype_), di = dtype_size(dtype);
  const char* s = static_cast<const char*>(src.raw());
  char* d = static_cast<char*>(t.raw());
  const int64_t n = numel();
  if (dtype_ == DType::I64 && dtype == DType::I32) {
    for (int64_t i = 0; i < n; ++i) reinterpret_cast<int32_t*>(d)[i] = static_cast<int32_t>(reinterpret_cast<const int64_t*>(s)[i]);
  } else if (dtype_ == DType::I32 && dtype == DType::I64) {
    for (int64_t i = 0; i < n; ++i) reinterpret_cast<int64_t*>(d)[i] = reinterpret_cast<const int32_t*>(s)[i];
  } else {
    for (int64_t i = 0; i < n; ++i) store_from_f32(d + i * di, dtype, load_as_f32(s + i * si, dtype_));
  }
  return t;
}

void Tensor::fill(float value) {
  if (!defined()) return;
  if (device_.is_cpu()) {
    if (is_contiguous()) {
      const int64_t n = numel();
      char* d = static_cast<char*>(raw());
      const size_t es = dtype_size(dtype_);
      if (dtype_ == DType::F32) {
        float* f = reinterpret_cast<float*>(d);
        for (int64_t i = 0; i < n; ++i) f[i] = value;
      } else {
        for (int64_t i = 0; i < n; ++i) store_from_f32(d + i * es, dtype_, value);
      }
    } else {
      Tensor tmp = empty(shape_, dtype_, device_);
      tmp.fill(value);
      copy_from(tmp);
    }
    return;
  }
  Tensor host = empty(shape_, dtype_, Device::cpu());
  host.fill(value);
  copy_from(host);
}

void Tensor::zero() {
  if (!defined()) return;
  if (is_contiguous()) {
    if (device_.is_cpu()) {
      std::memset(raw(), 0, nbytes());
      return;
    }
#ifdef VT_CUDA
    // Async on the compute stream: cudaMemset of device memory does not wait
    // either, and a CUDA Graph can capture this form (zero_grad in a step).
    cudaMemsetAsync(raw(), 0, nbytes(), nullptr);
    return;
#endif
  }
  fill(0.f);
}

std::vector<float> Tensor::to_vector() const {
  Tensor t = to(Device::cpu()).to(DType::F32).contiguous();
  std::vector<float> v(static_cast<size_t>(t.numel()));
  if (!v.empty()) std::memcpy(v.data(), t.raw(), v.size() * sizeof(float));
  return v;
}

float Tensor::item() const {
  if (numel() != 1) throw std::invalid_argument("item() of " + str());
  return to_vector()[0];
}

std::string Tensor::str() const {
  if (!defined()) return "Tensor(undefined)";
  return std::string("Tensor(") + dtype_name(dtype_) + ", " + shape_str(shape_) + ", " + device_.str() + ")";
}

}  // namespace vt
