// CUDA nearest 2x upsampling behind kernels/upsample.h, the twin of
// kernels/cpu/upsample.h: `planes` contiguous fp32 planes [h, w] into
// [2h, 2w], y[p, i, j] = x[p, i / 2, j / 2]; one thread per output element
// (a copy, so bit-identical to the CPU). x and y must not overlap.
// Errors: std::runtime_error (CUDA errors). Queued on `stream`.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace vt {
namespace cuda {

void upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t h, int64_t w, cudaStream_t stream = 0);
// The same over bf16 planes (values copied bit for bit).
void upsample_nearest2x_bf16(const void* x, void* y, int64_t planes, int64_t h, int64_t w, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
