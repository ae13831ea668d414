#include "kernels/cuda/upsample.h"

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

template <typename T>
__global__ void upsample_nearest2x_kernel(const T* __restrict__ x, T* __restrict__ y, int64_t h, int64_t w,
                                          int64_t total) {
  const int64_t ow = 2 * w, oh = 2 * h;
  VT_GRID_STRIDE(e, total) {
    const int64_t j = e % ow, i = (e / ow) % oh, p = e / (ow * oh);
    y[e] = x[(p * h + i / 2) * w + j / 2];
  }
}

template <typename T>
void launch(const T* x, T* y, int64_t planes, int64_t h, int64_t w, cudaStream_t stream) {
  const int64_t total = planes * 4 * h * w;
  if (total == 0) return;
  constexpr int kThreads = 256;
  upsample_nearest2x_kernel<T><<<detail::grid_1d(total, kThreads), kThreads, 0, stream>>>(x, y, h, w, total);
  detail::check_launch("upsample_nearest2x");
}

}  // namespace

void upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t h, int64_t w, cudaStream_t stream) {
  launch(x, y, planes, h, w, stream);
}

void upsample_nearest2x_bf16(const void* x, void* y, int64_t planes, int64_t h, int64_t w, cudaStream_t stream) {
  // A copy of 16-bit values: the bf16 bits themselves.
  launch(static_cast<const uint16_t*>(x), static_cast<uint16_t*>(y), planes, h, w, stream);
}

}  // namespace cuda
}  // namespace vt
