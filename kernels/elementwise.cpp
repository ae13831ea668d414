#include "kernels/elementwise.h"

#include "kernels/cpu/elementwise.h"
#include "kernels/op_checks.h"

namespace vt {

namespace {

// Checks a set of same-shape contiguous F32 tensors on one device, CPU only for now.
void check_all(const char* op, std::initializer_list<std::pair<const char*, const Tensor*>> ts) {
  const auto& first = *ts.begin();
  opcheck::dtype(op, first.first, *first.second, DType::F32);
  for (const auto& p : ts) {
    opcheck::f32_like(op, p.first, *p.second, first.second->shape());
    if (p.second->device() != first.second->device())
      opcheck::fail(op, opcheck::desc(p.first, *p.second) + " is not on the device of " +
                            opcheck::desc(first.first, *first.second));
  }
  if (!first.second->device().is_cpu()) opcheck::no_cuda(op);
}

}  // namespace

void add(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_all("add", {{"a", &a}, {"b", &b}, {"out", &out}});
  cpu::add(a.f32(), b.f32(), out.f32(), a.numel());
}

void axpby(float alpha, const Tensor& a, float beta, const Tensor& b, const Tensor& out) {
  check_all("axpby", {{"a", &a}, {"b", &b}, {"out", &out}});
  cpu::axpby(alpha, a.f32(), beta, b.f32(), out.f32(), a.numel());
}

void axpy(float alpha, const Tensor& x, const Tensor& y) {
  check_all("axpy", {{"x", &x}, {"y", &y}});
  cpu::axpy(alpha, x.f32(), y.f32(), x.numel());
}

void scale(const Tensor& x, float alpha, const Tensor& out) {
  check_all("scale", {{"x", &x}, {"out", &out}});
  cpu::scale(x.f32(), alpha, out.f32(), x.numel());
}

void mul(const Tensor& a, const Tensor& b, const Tensor& out) {
  check_all("mul", {{"a", &a}, {"b", &b}, {"out", &out}});
  cpu::mul(a.f32(), b.f32(), out.f32(), a.numel());
}

double sum(const Tensor& x) {
  check_all("sum", {{"x", &x}});
  return cpu::sum(x.f32(), x.numel());
}

}  // namespace vt
