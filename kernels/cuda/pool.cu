#include "kernels/cuda/pool.h"

#include <cfloat>

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

__global__ void pool2d_kernel(Pool2dDesc d, const float* __restrict__ x, float* __restrict__ y, int64_t total) {
  VT_GRID_STRIDE(e, total) {
    const int64_t j = e % d.ow, i = (e / d.ow) % d.oh, c = (e / (d.ow * d.oh)) % d.c, n = e / (d.ow * d.oh * d.c);
    const float* xp = x + n * d.x_strides[0] + c * d.x_strides[1];
    const int64_t h0 = i * d.sh - d.ph, w0 = j * d.sw - d.pw;
    float acc = d.kind == 0 ? -FLT_MAX : 0.f;
    bool any = false;
    int count = 0;
    for (int a = 0; a < d.kh; ++a) {
      const int64_t ih = h0 + a;
      if (ih < 0 || ih >= d.h) continue;
      for (int b = 0; b < d.kw; ++b) {
        const int64_t iw = w0 + b;
        if (iw < 0 || iw >= d.w) continue;
        const float v = xp[ih * d.x_strides[2] + iw];
        if (d.kind == 0) acc = any ? fmaxf(acc, v) : v;  // padding never wins the max
        else acc += v;
        any = true;
        ++count;
      }
    }
    // Average: floor-mode windows never reach past the padding, so counting
    // the padding divides by the whole window (as PyTorch and oneDNN).
    const float r = d.kind == 0 ? acc : acc / static_cast<float>(d.kind == 1 ? d.kh * d.kw : count);
    y[n * d.y_strides[0] + c * d.y_strides[1] + i * d.y_strides[2] + j] = r;
  }
}

__global__ void global_avg_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t rows, int64_t hw) {
  VT_GRID_STRIDE(r, rows) {
    const float* p = x + r * hw;
    double s = 0.0;
    for (int64_t i = 0; i < hw; ++i) s += p[i];
    y[r] = static_cast<float>(s / static_cast<double>(hw));
  }
}

}  // namespace

void pool2d_forward(const Pool2dDesc& d, const float* x, float* y, cudaStream_t stream) {
  const int64_t total = d.n * d.c * d.oh * d.ow;
  if (total == 0) return;
  pool2d_kernel<<<grid_1d(total, 256), 256, 0, stream>>>(d, x, y, total);
  check_launch("cuda::pool2d_forward");
}

void global_avg_pool2d(const float* x, float* y, int64_t rows, int64_t hw, cudaStream_t stream) {
  if (rows == 0) return;
  global_avg_kernel<<<grid_1d(rows, 128), 128, 0, stream>>>(x, y, rows, hw);
  check_launch("cuda::global_avg_pool2d");
}

}  // namespace cuda
}  // namespace vt
