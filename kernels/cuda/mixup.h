// CUDA Mixup/CutMix application behind kernels/mixup.h; the arithmetic of
// kernels/cpu/mixup.h with products and sums rounded separately (no FMA),
// so results equal the CPU's bits. images in `io` (F32 or BF16).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

void mixup_images(void* images, int64_t B, int64_t n, float l, float m, DType io, cudaStream_t stream = 0);
void cutmix_images(void* images, int64_t B, int64_t C, int64_t H, int64_t W, int y0, int y1, int x0, int x1, DType io,
                   cudaStream_t stream = 0);
void mix_targets(const int32_t* labels, int64_t B, int64_t K, double lambda, double smoothing, float* targets,
                 cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
