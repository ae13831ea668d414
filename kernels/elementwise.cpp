#include "kernels/elementwise.h"

#include "kernels/cpu/elementwise.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/elementwise.h"
#endif

namespace vt {

namespace {

// Checks a set of same-shape contiguous tensors of one dtype (F32, or BF16
// on CUDA) on one device; returns true when that device is CUDA (a CUDA
// tensor throws in a build without CUDA).
bool check_all(const char* op, std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  const auto& first = *ts.begin();
  const DType dt = opcheck::io_dtype(op, first.first, *first.second);
  for (const auto& p : ts) {
    opcheck::like(op, p.first, *p.second, first.second->shape(), dt);
    if (p.second->device() != first.second->device())
      opcheck::fail(op, opcheck::desc(p.first, *p.second) + " is not on the device of " +
                            opcheck::desc(first.first, *first.second));
  }
  if (first.second->device().is_cpu()) return false;
#ifndef VT_CUDA
  opcheck::no_cuda(op);
#endif
  return true;
}

#ifdef VT_CUDA
#define VT_ON_CUDA(call) \
  do {                   \
    call;                \
    return;              \
  } while (0)
#else
#define VT_ON_CUDA(call) return
#endif

}  // namespace

void add(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (check_all("add", {{"a", &a}, {"b", &b}, {"out", &out}}))
    VT_ON_CUDA(cuda::axpby(1.0f, a.raw(), 1.0f, b.raw(), out.raw(), a.numel(), a.dtype()));
  cpu::add(a.f32(), b.f32(), out.f32(), a.numel());
}

void axpby(float alpha, const Tensor& a, float beta, const Tensor& b, const Tensor& out) {
  if (check_all("axpby", {{"a", &a}, {"b", &b}, {"out", &out}}))
    VT_ON_CUDA(cuda::axpby(alpha, a.raw(), beta, b.raw(), out.raw(), a.numel(), a.dtype()));
  cpu::axpby(alpha, a.f32(), beta, b.f32(), out.f32(), a.numel());
}

void axpy(float alpha, const Tensor& x, const Tensor& y) {
  if (check_all("axpy", {{"x", &x}, {"y", &y}}))
    VT_ON_CUDA(cuda::axpy(alpha, x.raw(), y.raw(), x.numel(), x.dtype()));
  cpu::axpy(alpha, x.f32(), y.f32(), x.numel());
}

void scale(const Tensor& x, float alpha, const Tensor& out) {
  if (check_all("scale", {{"x", &x}, {"out", &out}}))
    VT_ON_CUDA(cuda::scale(x.raw(), alpha, out.raw(), x.numel(), x.dtype()));
  cpu::scale(x.f32(), alpha, out.f32(), x.numel());
}

void mul(const Tensor& a, const Tensor& b, const Tensor& out) {
  if (check_all("mul", {{"a", &a}, {"b", &b}, {"out", &out}}))
    VT_ON_CUDA(cuda::mul(a.raw(), b.raw(), out.raw(), a.numel(), a.dtype()));
  cpu::mul(a.f32(), b.f32(), out.f32(), a.numel());
}

void clamp(const Tensor& x, float lo, float hi, const Tensor& out) {
  if (!(lo <= hi)) opcheck::fail("clamp", "lo " + std::to_string(lo) + " must not exceed hi " + std::to_string(hi));
  if (check_all("clamp", {{"x", &x}, {"out", &out}}))
    VT_ON_CUDA(cuda::clamp(x.raw(), lo, hi, out.raw(), x.numel(), x.dtype()));
  cpu::clamp(x.f32(), lo, hi, out.f32(), x.numel());
}

void convert(const Tensor& src, const Tensor& dst) {
  const char* op = "convert";
  for (const auto& [name, t] : {std::pair<const char*, const Tensor*>{"src", &src}, {"dst", &dst}}) {
    opcheck::defined(op, name, *t);
    if (t->dtype() != DType::F32 && t->dtype() != DType::BF16)
      opcheck::fail(op, opcheck::desc(name, *t) + ": dtype " + dtype_name(t->dtype()) + " (F32 or BF16)");
  }
  opcheck::like(op, "dst", dst, src.shape(), dst.dtype());
  opcheck::like(op, "src", src, src.shape(), src.dtype());
  if (src.device() != dst.device())
    opcheck::fail(op, opcheck::desc("dst", dst) + " is not on the device of " + opcheck::desc("src", src));
  if (!src.device().is_cpu()) {
#ifdef VT_CUDA
    cuda::convert(src.raw(), src.dtype(), dst.raw(), dst.dtype(), src.numel());
    return;
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::convert(src.raw(), src.dtype(), dst.raw(), dst.dtype(), src.numel());
}

double sum(const Tensor& x) {
  if (check_all("sum", {{"x", &x}})) {
#ifdef VT_CUDA
    return cuda::sum(x.raw(), x.numel(), false, x.dtype());
#endif
  }
  return cpu::sum(x.f32(), x.numel());
}

}  // namespace vt
