#include "kernels/activation.h"

#include "kernels/cpu/activation.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/activation.h"
#endif

namespace vt {
using opcheck::on_cuda;

namespace {

#ifdef VT_CUDA
cuda::ActKind cuda_kind(Activation a) {
  switch (a) {
    case Activation::GeluErf: return cuda::ActKind::GeluErf;
    case Activation::GeluTanh: return cuda::ActKind::GeluTanh;
    case Activation::SiLU: return cuda::ActKind::SiLU;
  }
  return cuda::ActKind::GeluErf;
}
#endif

}  // namespace

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
  const DType dt = opcheck::io_dtype(op, "x", x);
  opcheck::contiguous(op, "x", x);
  opcheck::like(op, "y", y, x.shape(), dt);
  opcheck::same_device(op, x.device(), {{"y", &y}});
  const int64_t n = x.numel();
  if (on_cuda(op, x)) {
#ifdef VT_CUDA
    cuda::activation_forward(cuda_kind(kind), x.raw(), y.raw(), n, dt);
#endif
    return;
  }
  switch (kind) {
    case Activation::GeluErf: return cpu::gelu_erf_forward(x.f32(), y.f32(), n);
    case Activation::GeluTanh: return cpu::gelu_tanh_forward(x.f32(), y.f32(), n);
    case Activation::SiLU: return cpu::silu_forward(x.f32(), y.f32(), n);
  }
}

void activation_backward(Activation kind, const Tensor& dy, const Tensor& x, const Tensor& dx) {
  const char* op = "activation_backward";
  const DType dt = opcheck::io_dtype(op, "x", x);
  opcheck::contiguous(op, "x", x);
  opcheck::like(op, "dy", dy, x.shape(), dt);
  opcheck::like(op, "dx", dx, x.shape(), dt);
  opcheck::same_device(op, x.device(), {{"dy", &dy}, {"dx", &dx}});
  const int64_t n = x.numel();
  if (on_cuda(op, x)) {
#ifdef VT_CUDA
    cuda::activation_backward(cuda_kind(kind), dy.raw(), x.raw(), dx.raw(), n, dt);
#endif
    return;
  }
  switch (kind) {
    case Activation::GeluErf: return cpu::gelu_erf_backward(dy.f32(), x.f32(), dx.f32(), n);
    case Activation::GeluTanh: return cpu::gelu_tanh_backward(dy.f32(), x.f32(), dx.f32(), n);
    case Activation::SiLU: return cpu::silu_backward(dy.f32(), x.f32(), dx.f32(), n);
  }
}

}  // namespace vt
