// CUDA bilinear resize behind kernels/resize.h (fp32, planes of contiguous
// floats): one thread per output element. Source coordinates and weights are
// the CPU twin's float expressions evaluated without fused multiply-adds, so
// the result equals the CPU's bit for bit.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace vt {
namespace cuda {

void resize_bilinear(const float* x, float* y, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                     cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
