#include "kernels/activation.h"

#include "kernels/cpu/activation.h"
#include "kernels/op_checks.h"

namespace vt {

Activation activation_from_name(const std::string& name) {
  if (name == "gelu") return Activation::GeluErf;
  if (name == "gelu_tanh") return Activation::GeluTanh;
  if (name == "silu") return Activation::SiLU;
  throw std::invalid_argument("activation: unknown name '" + name + "' (expected gelu, gelu_tanh or silu)");
}

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::GeluErf: return "gelu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::SiLU: return "silu";
  }
  return "?";
}

void activation_forward(Activation kind, const Tensor& x, const Tensor& y) {
  const char* op = "activation_forward";
  opcheck::dtype(op, "x", x, DType::F32);
  opcheck::contiguous(op, "x", x);
  opcheck::f32_like(op, "y", y, x.shape());
  opcheck::same_device(op, x.device(), {{"y", &y}});
  if (!x.device().is_cpu()) opcheck::no_cuda(op);
  const int64_t n = x.numel();
  switch (kind) {
    case Activation::GeluErf: return cpu::gelu_erf_forward(x.f32(), y.f32(), n);
    case Activation::GeluTanh: return cpu::gelu_tanh_forward(x.f32(), y.f32(), n);
    case Activation::SiLU: return cpu::silu_forward(x.f32(), y.f32(), n);
  }
}

void activation_backward(Activation kind, const Tensor& dy, const Tensor& x, const Tensor& dx) {
  const char* op = "activation_backward";
  opcheck::dtype(op, "x", x, DType::F32);
  opcheck::contiguous(op, "x", x);
  opcheck::f32_like(op, "dy", dy, x.shape());
  opcheck::f32_like(op, "dx", dx, x.shape());
  opcheck::same_device(op, x.device(), {{"dy", &dy}, {"dx", &dx}});
  if (!x.device().is_cpu()) opcheck::no_cuda(op);
  const int64_t n = x.numel();
  switch (kind) {
    case Activation::GeluErf: return cpu::gelu_erf_backward(dy.f32(), x.f32(), dx.f32(), n);
    case Activation::GeluTanh: return cpu::gelu_tanh_backward(dy.f32(), x.f32(), dx.f32(), n);
    case Activation::SiLU: return cpu::silu_backward(dy.f32(), x.f32(), dx.f32(), n);
  }
}

}  // namespace vt
