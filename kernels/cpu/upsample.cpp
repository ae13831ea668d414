#include "kernels/cpu/upsample.h"

namespace vt {
namespace cpu {

void upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t h, int64_t w) {
  const int64_t ow = 2 * w;
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < planes * h; ++p) {
    const float* xr = x + p * w;
    float* y0 = y + p * 2 * ow;  // output rows 2i and 2i+1 of plane p / h
    for (int64_t j = 0; j < w; ++j) y0[2 * j] = y0[2 * j + 1] = xr[j];
    for (int64_t j = 0; j < ow; ++j) y0[ow + j] = y0[j];
  }
}

}  // namespace cpu
}  // namespace vt
