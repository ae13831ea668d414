#include "kernels/cuda/resize.h"

#include "kernels/cuda/common.cuh"
#include "kernels/rounded_math.h"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// Separately rounded float operations (kernels/rounded_math.h): nvcc would
// otherwise contract a*b+c into one FMA, which the CPU twin does not.
using rounded::add;
using rounded::mul;

// kernels/cpu/resize.cpp axis_taps for one destination index.
__device__ __forceinline__ void tap(int64_t d, int64_t in, float scale, int64_t& i0, int64_t& i1, float& l0,
                                    float& l1) {
  float src = add(mul(scale, add(static_cast<float>(d), 0.5f)), -0.5f);
  if (src < 0.f) src = 0.f;
  int64_t a = static_cast<int64_t>(floorf(src));
  if (a > in - 1) a = in - 1;
  const float lam = fminf(fmaxf(add(src, -static_cast<float>(a)), 0.f), 1.f);
  i0 = a;
  i1 = a < in - 1 ? a + 1 : a;
  l1 = lam;
  l0 = add(1.f, -lam);
}

__global__ void resize_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t h, int64_t w, int64_t oh,
                              int64_t ow, float scale_h, float scale_w, int64_t total) {
  VT_GRID_STRIDE(e, total) {
    const int64_t j = e % ow, i = (e / ow) % oh, p = e / (ow * oh);
    int64_t y0, y1, x0, x1;
    float ly0, ly1, lx0, lx1;
    tap(i, h, scale_h, y0, y1, ly0, ly1);
    tap(j, w, scale_w, x0, x1, lx0, lx1);
    const float* r0 = x + (p * h + y0) * w;
    const float* r1 = x + (p * h + y1) * w;
    const float t0 = add(mul(r0[x0], lx0), mul(r0[x1], lx1));
    const float t1 = add(mul(r1[x0], lx0), mul(r1[x1], lx1));
    y[e] = add(mul(t0, ly0), mul(t1, ly1));
  }
}

}  // namespace

void resize_bilinear(const float* x, float* y, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow,
                     cudaStream_t stream) {
  const int64_t total = planes * oh * ow;
  if (total == 0) return;
  // The scale in float, formed on the host exactly as the CPU twin forms it.
  const float scale_h = static_cast<float>(h) / static_cast<float>(oh);
  const float scale_w = static_cast<float>(w) / static_cast<float>(ow);
  resize_kernel<<<grid_1d(total, 256), 256, 0, stream>>>(x, y, h, w, oh, ow, scale_h, scale_w, total);
  check_launch("cuda::resize_bilinear");
}

}  // namespace cuda
}  // namespace vt
