// CUDA drop-path (stochastic depth) behind kernels/drop_path.h, same
// contract as kernels/cpu/drop_path.h.
//  - drop_path_scales draws the per-sample mask on the device from the same
//    Philox keys as the host (core/philox_block.h): sample b keeps iff the
//    first uniform_double of Philox(seed, stream, sample_offset + b *
//    sample_stride) < keep,
//    so masks are identical to the CPU's, bit for bit.
//  - x/out/residual [B, n] contiguous in `io` (F32 or BF16), scales [B] fp32;
//    fp32 arithmetic, one rounding per output. A dropped sample is written as
//    zeros (forward) or left untouched (add) without reading x.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

void drop_path_scales(float* scales, int64_t B, double keep, float kept_scale, uint64_t seed, uint64_t stream,
                      int64_t sample_offset, int64_t sample_stride = 1, cudaStream_t cuda_stream = 0);

// drop_path_scales with stream = philox_stream(*step, block, sublayer),
// formed on the device from step (one int64 in device memory).
void drop_path_scales_at(float* scales, int64_t B, double keep, float kept_scale, uint64_t seed, const int64_t* step,
                         uint64_t block, uint64_t sublayer, int64_t sample_offset, int64_t sample_stride,
                         cudaStream_t cuda_stream = 0);

// out[b, i] = x[b, i] * scales[b]  (out may be x)
void drop_path_forward(const void* x, const float* scales, void* out, int64_t B, int64_t n, DType io,
                       cudaStream_t stream = 0);
// residual[b, i] += x[b, i] * scales[b]
void drop_path_add(const void* x, const float* scales, void* residual, int64_t B, int64_t n, DType io,
                   cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
