// GroupNorm over [N, C, *] (torch.nn.functional.group_norm), forward only —
// the VAE that uses it (vae/) is frozen, so no backward exists:
//   x viewed as [N, G, C/G * S] (S = product of the trailing dims),
//   mean, var = mean and biased (population) variance of each (n, g) row,
//   y[n, c, s] = (x[n, c, s] - mean) / sqrt(var + eps) * weight[c] + bias[c]
// optionally followed by SiLU, y * sigmoid(y) (diffusers' ResnetBlock2D and
// Encoder/Decoder always apply norm then SiLU; fusing saves one pass).
// weight and bias [C] are each optional (undefined = absent, affine=False).
// Statistics: two passes (mean, centred squares), float partial sums over
// blocks of 1024 elements added in double.
//
// Shapes (all tensors on one device): x [N, C, ...] contiguous, at least
// 2-d; y the same shape and dtype, contiguous, may alias x. C must be
// divisible by num_groups. Dtypes: x, y F32 (CPU or CUDA), or BF16 on CUDA
// (PyTorch's CUDA group_norm for bf16: the same fp32 statistics and
// arithmetic over the bf16 inputs, each output, after SiLU when fused,
// rounded once to bf16 - PyTorch's unfused GroupNorm then SiLU rounds twice,
// a difference of at most one bf16 rounding); weight, bias F32.
// CPU: OpenMP over the N*G rows. CUDA (kernels/cuda/groupnorm.h): the same
// two passes, float sums over chunks of 4096 elements added in double in
// chunk order (deterministic), SiLU with expf (the CPU's is a 2-ulp
// polynomial): results agree within 1e-5 of the output scale (the tests' bound).
// Errors: std::invalid_argument naming the op, the tensor and its shape, or
// num_groups and C when they do not divide.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vt {

void groupnorm_forward(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, float eps,
                       const Tensor& y, bool silu = false);

}  // namespace vt
