// Argument checks shared by the dispatching .cpp files of the op library
// (internal; not part of the public op API). Every failure throws
// std::invalid_argument whose message starts with the op name and names the
// offending tensor and its shape, so a bad call is diagnosable from the log.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "core/tensor.h"

namespace vt {
namespace opcheck {

[[noreturn]] inline void fail(const char* op, const std::string& msg) {
  throw std::invalid_argument(std::string(op) + ": " + msg);
}

inline std::string desc(const char* name, const Tensor& t) {
  return std::string(name) + " " + (t.defined() ? t.str() : std::string("(undefined)"));
}

inline void defined(const char* op, const char* name, const Tensor& t) {
  if (!t.defined()) fail(op, std::string(name) + " is undefined");
}

inline void dtype(const char* op, const char* name, const Tensor& t, DType want) {
  defined(op, name, t);
  if (t.dtype() != want)
    fail(op, desc(name, t) + " must have dtype " + dtype_name(want));
}

inline void contiguous(const char* op, const char* name, const Tensor& t) {
  defined(op, name, t);
  if (!t.is_contiguous()) fail(op, desc(name, t) + " must be contiguous");
}

inline void shape(const char* op, const char* name, const Tensor& t, const Shape& want) {
  defined(op, name, t);
  if (t.shape() != want) fail(op, desc(name, t) + " must have shape " + shape_str(want));
}

inline void same_shape(const char* op, const char* na, const Tensor& a, const char* nb, const Tensor& b) {
  if (a.shape() != b.shape()) fail(op, desc(na, a) + " and " + desc(nb, b) + " must have the same shape");
}

// Contiguous F32 tensor of the given shape.
inline void f32_like(const char* op, const char* name, const Tensor& t, const Shape& want) {
  shape(op, name, t, want);
  dtype(op, name, t, DType::F32);
  contiguous(op, name, t);
}

// The activation dtype of an op whose CUDA kernels read and write F32 or
// BF16 (with fp32 arithmetic): F32 on every device, BF16 on CUDA only (the
// CPU kernels are fp32). Anything else fails naming the op, the tensor and
// its dtype. Returns t's dtype.
inline DType io_dtype(const char* op, const char* name, const Tensor& t) {
  defined(op, name, t);
  if (t.dtype() == DType::F32) return DType::F32;
  if (t.dtype() == DType::BF16 && t.device().is_cuda()) return DType::BF16;
  fail(op, desc(name, t) + ": dtype " + dtype_name(t.dtype()) + " is not supported " +
               (t.dtype() == DType::BF16 ? "on the CPU (F32 only; BF16 on CUDA)" : "(F32, or BF16 on CUDA)"));
}

// Contiguous tensor of the given shape and dtype.
inline void like(const char* op, const char* name, const Tensor& t, const Shape& want, DType dt) {
  shape(op, name, t, want);
  dtype(op, name, t, dt);
  contiguous(op, name, t);
}

// All defined tensors live on `dev`.
inline void same_device(const char* op, Device dev, std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  for (const auto& p : ts)
    if (p.second->defined() && p.second->device() != dev)
      fail(op, desc(p.first, *p.second) + " is not on " + dev.str());
}

// Rows of an op on [..., D]: product of the leading dimensions.
inline int64_t rows_of(const Tensor& t) {
  return t.dim() == 0 ? 1 : t.numel() / (t.shape().back() == 0 ? 1 : t.shape().back());
}

// The dispatch decision for ops that have no CUDA twin yet: a CUDA tensor is
// an error that says why, rather than a silent host access of device memory.
[[noreturn]] inline void no_cuda(const char* op) {
#ifdef VT_CUDA
  fail(op, "no CUDA implementation of this op yet");
#else
  fail(op, "CUDA tensor given but vtrain was built without CUDA");
#endif
}


// The device dispatch of an op with a CUDA twin: false for a CPU tensor,
// true for a CUDA one. In a build without CUDA a CUDA tensor is an error
// naming the op (no_cuda).
inline bool on_cuda(const char* op, Device dev) {
  if (dev.is_cpu()) return false;
#ifndef VT_CUDA
  no_cuda(op);
#endif
  return true;
}
inline bool on_cuda(const char* op, const Tensor& t) { return on_cuda(op, t.device()); }

}  // namespace opcheck
}  // namespace vt

// VT_CUDA_CALL(cuda::kernel(...)): in a CUDA build, calls the CUDA twin and
// returns from the dispatching function; without CUDA it only returns (the
// call is never reached there: on_cuda has already thrown).
#ifdef VT_CUDA
#define VT_CUDA_CALL(call) \
  do {                     \
    call;                  \
    return;                \
  } while (0)
#else
#define VT_CUDA_CALL(call) return
#endif
