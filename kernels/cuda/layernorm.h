// CUDA LayerNorm behind kernels/layernorm.h, on raw device pointers; the
// twin of kernels/cpu/layernorm.h (same semantics, same argument order).
//
// x, y, dy, dx: contiguous [rows, d] in `io` (F32 or BF16); weight, bias,
// mean, rstd, dweight, dbias: fp32 (statistics and parameter gradients stay
// fp32 in bf16 training). Any of weight/bias/mean/rstd/dweight/dbias may be
// nullptr when absent. Arithmetic is fp32: statistics by a two-pass
// (mean, then centred variance) reduction. Each row is held in registers
// (kernels/cuda/row_warp.cuh): one warp per row for d <= 1024 (4 rows per
// block), a block of ceil(d / 1024) warps per row for wider rows
// (d <= 32768); 128-bit loads when d is a multiple of 4 (fp32) / 8 (bf16) and
// the pointers are 16-byte aligned, scalar loads otherwise.
// dweight/dbias accumulate through a deterministic two-stage column sum
// (per-chunk partials, then the chunks in order): identical bits every run.
// For d <= 1024 with dx requested the partials come from the dx kernel itself
// (32-row chunks), so dy and x are read once; otherwise a column-strip kernel
// (64-row chunks, vector loads) reads them again.
// dx may alias dy (not when accumulating); y may alias x.
// Errors: std::invalid_argument (bad dtype or d too large),
// std::runtime_error (CUDA errors). All work is queued on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

void layernorm_forward(const void* x, const float* weight, const float* bias, float eps, int64_t rows, int64_t d,
                       void* y, float* mean, float* rstd, DType io, cudaStream_t stream = 0);

// accumulate_dx: dx += instead of dx =. dx may be nullptr (parameter grads only).
void layernorm_backward(const void* dy, const void* x, const float* weight, const float* mean, const float* rstd,
                        int64_t rows, int64_t d, void* dx, bool accumulate_dx, float* dweight, float* dbias,
                        DType io, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
