#include "kernels/cpu/groupnorm.h"

#include <cmath>

#include "kernels/cpu/fast_exp.h"

namespace vt {
namespace cpu {

void groupnorm_forward(const float* x, const float* weight, const float* bias, float* y, int64_t n, int64_t c,
                       int64_t spatial, int64_t groups, float eps, bool silu) {
  const int64_t cg = c / groups;
  const int64_t row = cg * spatial;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n * groups; ++r) {
    const float* xr = x + r * row;
    float* yr = y + r * row;
    // Two passes in double (mean, then centred squares): exact enough that
    // the float result matches a double reference to rounding.
    double s = 0.0;
    for (int64_t i = 0; i < row; ++i) s += xr[i];
    const double mean = s / static_cast<double>(row);
    double ss = 0.0;
    for (int64_t i = 0; i < row; ++i) {
      const double d = xr[i] - mean;
      ss += d * d;
    }
    const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(row) + static_cast<double>(eps));
    const int64_t c0 = (r % groups) * cg;
    for (int64_t k = 0; k < cg; ++k) {
      const float w = weight ? weight[c0 + k] : 1.f, b = bias ? bias[c0 + k] : 0.f;
      // y = x * a + shift with a = rstd * w, shift = b - mean * a.
      const float a = static_cast<float>(rstd * w);
      const float shift = static_cast<float>(b - mean * rstd * w);
      const float* xc = xr + k * spatial;
      float* yc = yr + k * spatial;
      if (silu) {
#pragma omp simd
        for (int64_t i = 0; i < spatial; ++i) {
          const float v = xc[i] * a + shift;
          yc[i] = v / (1.f + exp_approx(-v));
        }
      } else {
#pragma omp simd
        for (int64_t i = 0; i < spatial; ++i) yc[i] = xc[i] * a + shift;
      }
    }
  }
}

}  // namespace cpu
}  // namespace vt
