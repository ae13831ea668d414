// CUDA GroupNorm behind kernels/groupnorm.h, on raw device pointers; the twin
// of kernels/cpu/groupnorm.h (same semantics, same argument order).
//
// x, y: contiguous fp32 [n, c, spatial] (y may alias x: every element is read
// by the statistics passes before the output pass, and the output pass reads
// and writes each element in the same thread). weight, bias: fp32 [c] or
// nullptr (affine=False). silu: y = v * sigmoid(v) of the normalised v.
// Rows are the n * groups (n, g) slices of c / groups * spatial elements.
// Statistics are two passes (mean, then centred squares) as on the CPU: each
// row is cut into chunks of kGroupNormChunk elements, a block sums a chunk in
// float (fixed strided partials, then a fixed shuffle tree), and one thread
// per row adds its chunks' sums in double, in chunk order. The order of every
// addition depends only on the shape, so the result is the same bits every
// run. mean and rstd are then folded, in double, into a per-(n, c) scale and
// shift (y = x * a + shift) exactly as the CPU does.
// The `io` overload reads and writes x, y in F32 or BF16 (PyTorch's CUDA
// group_norm for bf16: fp32 statistics and arithmetic, each output rounded
// once to bf16, SiLU included); weight and bias stay fp32.
// Errors: std::runtime_error (CUDA errors), std::invalid_argument for
// another io dtype. All work is queued on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

constexpr int64_t kGroupNormChunk = 4096;

void groupnorm_forward(const float* x, const float* weight, const float* bias, float* y, int64_t n, int64_t c,
                       int64_t spatial, int64_t groups, float eps, bool silu, cudaStream_t stream = 0);
void groupnorm_forward(const void* x, const float* weight, const float* bias, void* y, DType io, int64_t n,
                       int64_t c, int64_t spatial, int64_t groups, float eps, bool silu, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
