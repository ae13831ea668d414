// LayerNorm over the last dimension (torch.nn.functional.layer_norm):
//   y = (x - mean) * rstd * weight + bias,  rstd = 1 / sqrt(var + eps),
// var the biased (population) variance of the row. x is [..., D], flattened
// into R rows. weight and bias [D] are each optional (undefined = absent, so
// both undefined is LayerNorm(elementwise_affine=False) as in DiT's norm1/2).
//
// Statistics are computed in double per row on CPU and stored as fp32
// mean/rstd [R] for backward, which recomputes x_hat from them instead of
// saving it. CPU: OpenMP over rows (forward, dx) and over column blocks
// (dweight/dbias, a fixed summation order so results do not depend on the
// thread count). CUDA: kernels/cuda/layernorm.h, each row in registers (one
// warp per row for d <= 1024, a block of warps beyond), fp32 statistics,
// deterministic parameter-gradient sums.
//
// Dtypes: x, y, dy, dx are F32 on the CPU and F32 or BF16 (all the same) on
// CUDA; weight, bias, dweight, dbias, mean and rstd are always F32.
// Errors: std::invalid_argument naming the op and the tensor whose shape,
// dtype, contiguity or device is wrong.
#pragma once
#include "core/tensor.h"

namespace vt {

// y [..., D] (may alias x); mean, rstd [R] fp32 or undefined (not stored).
void layernorm_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps,
                       const Tensor& y, const Tensor& mean, const Tensor& rstd);

// Given dy [..., D], x and the saved mean/rstd:
//   dx = rstd * (g - mean(g) - x_hat * mean(g * x_hat)),  g = dy * weight
//        (overwrite; dx may alias dy; skipped when undefined)
//   dweight += sum_rows dy * x_hat,  dbias += sum_rows dy   (accumulate; each
//        skipped when undefined — pass undefined ones when weight/bias are absent)
void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& mean,
                        const Tensor& rstd, const Tensor& dx, const Tensor& dweight,
                        const Tensor& dbias);

// As layernorm_backward, but dx += (the residual stream's gradient adds up).
// dx must not alias dy here.
void layernorm_backward_accumulate(const Tensor& dy, const Tensor& x, const Tensor& weight,
                                   const Tensor& mean, const Tensor& rstd, const Tensor& dx,
                                   const Tensor& dweight, const Tensor& dbias);

}  // namespace vt
