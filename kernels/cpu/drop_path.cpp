#include "kernels/cpu/drop_path.h"

#include <algorithm>

namespace vt {
namespace cpu {

// A dropped sample is written as zeros without reading x (x * 0 would turn
// a non-finite activation into NaN; the sample contributes nothing anyway).
void drop_path_forward(const float* x, const float* scales, float* out, int64_t B, int64_t n) {
#pragma omp parallel for
  for (int64_t b = 0; b < B; ++b) {
    const float s = scales[b];
    float* o = out + b * n;
    if (s == 0.0f) {
      std::fill(o, o + n, 0.0f);
      continue;
    }
    const float* xb = x + b * n;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = xb[i] * s;
  }
}

void drop_path_add(const float* x, const float* scales, float* residual, int64_t B, int64_t n) {
#pragma omp parallel for
  for (int64_t b = 0; b < B; ++b) {
    const float s = scales[b];
    if (s == 0.0f) continue;
    const float* xb = x + b * n;
    float* r = residual + b * n;
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) r[i] += xb[i] * s;
  }
}

}  // namespace cpu
}  // namespace vt
