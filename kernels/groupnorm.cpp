#include "kernels/groupnorm.h"

#include <string>

#include "kernels/cpu/groupnorm.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/groupnorm.h"
#endif

namespace vt {

void groupnorm_forward(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, float eps,
                       const Tensor& y, bool silu) {
  const char* op = "groupnorm_forward";
  const DType io = opcheck::io_dtype(op, "x", x);
  opcheck::contiguous(op, "x", x);
  if (x.dim() < 2) opcheck::fail(op, opcheck::desc("x", x) + " must be at least 2-d [N, C, ...]");
  opcheck::like(op, "y", y, x.shape(), io);
  const int64_t n = x.size(0), c = x.size(1);
  if (num_groups < 1 || c % num_groups != 0)
    opcheck::fail(op, "num_groups " + std::to_string(num_groups) + " must divide the channels C = " +
                          std::to_string(c) + " of " + opcheck::desc("x", x));
  if (weight.defined()) opcheck::f32_like(op, "weight", weight, {c});
  if (bias.defined()) opcheck::f32_like(op, "bias", bias, {c});
  if (!(eps >= 0.f)) opcheck::fail(op, "eps " + std::to_string(eps) + " must be non-negative");
  opcheck::same_device(op, x.device(), {{"y", &y}, {"weight", &weight}, {"bias", &bias}});
  const int64_t spatial = n * c == 0 ? 0 : x.numel() / (n * c);
  const float* w = weight.defined() ? weight.f32() : nullptr;
  const float* b = bias.defined() ? bias.f32() : nullptr;
  if (opcheck::on_cuda(op, x)) {
#ifdef VT_CUDA
    return cuda::groupnorm_forward(x.raw(), w, b, y.raw(), io, n, c, spatial, num_groups, eps, silu);
#endif
  }
  cpu::groupnorm_forward(x.f32(), w, b, y.f32(), n, c, spatial, num_groups, eps, silu);
}

}  // namespace vt
