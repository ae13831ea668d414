// The SiLU's exp approximation clamps its argument; vectorising that
// compare-and-select needs -fno-trapping-math (as kernels/cpu/activation.cpp);
// nothing here relies on floating-point exception flags.
#pragma GCC optimize("no-trapping-math")

#include "kernels/cpu/groupnorm.h"

#include <cmath>

#include "kernels/cpu/fast_exp.h"

namespace vt {
namespace cpu {
namespace {

// Sum of f(x[i]) over n floats: vectorised float partial sums over blocks of
// kBlock elements, added up in double, so the rounding error stays that of a
// kBlock / lanes long float sum (~1e-7 relative) whatever n is.
constexpr int64_t kBlock = 1024;

double sum_of(const float* x, int64_t n) {
  double s = 0.0;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t e = i0 + kBlock < n ? i0 + kBlock : n;
    float p = 0.f;
#pragma omp simd reduction(+ : p)
    for (int64_t i = i0; i < e; ++i) p += x[i];
    s += p;
  }
  return s;
}

double centered_squares(const float* x, int64_t n, float mean) {
  double s = 0.0;
  for (int64_t i0 = 0; i0 < n; i0 += kBlock) {
    const int64_t e = i0 + kBlock < n ? i0 + kBlock : n;
    float p = 0.f;
#pragma omp simd reduction(+ : p)
    for (int64_t i = i0; i < e; ++i) {
      const float d = x[i] - mean;
      p += d * d;
    }
    s += p;
  }
  return s;
}

// y = silu(x * a + shift) over one channel plane.
void affine_silu(const float* x, float* y, int64_t n, float a, float shift) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i] * a + shift;
    y[i] = v / (1.0f + exp_approx(-v));
  }
}

}  // namespace

void groupnorm_forward(const float* x, const float* weight, const float* bias, float* y, int64_t n, int64_t c,
                       int64_t spatial, int64_t groups, float eps, bool silu) {
  const int64_t cg = c / groups;
  const int64_t row = cg * spatial;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < n * groups; ++r) {
    const float* xr = x + r * row;
    float* yr = y + r * row;
    // Two passes (mean, then centred squares) with double block sums.
    const double mean = sum_of(xr, row) / static_cast<double>(row);
    const float mean_f = static_cast<float>(mean);
    // Centred on the float mean; the (mean - mean_f)^2 term is below rounding.
    const double var = centered_squares(xr, row, mean_f) / static_cast<double>(row);
    const double rstd = 1.0 / std::sqrt(var + static_cast<double>(eps));
    const int64_t c0 = (r % groups) * cg;
    for (int64_t k = 0; k < cg; ++k) {
      const double w = weight ? weight[c0 + k] : 1.0, b = bias ? bias[c0 + k] : 0.0;
      // y = x * a + shift with a = rstd * w, shift = b - mean * a.
      const float a = static_cast<float>(rstd * w);
      const float shift = static_cast<float>(b - mean * rstd * w);
      const float* xc = xr + k * spatial;
      float* yc = yr + k * spatial;
      if (silu) {
        affine_silu(xc, yc, spatial, a, shift);
      } else {
#pragma omp simd
        for (int64_t i = 0; i < spatial; ++i) yc[i] = xc[i] * a + shift;
      }
    }
  }
}

}  // namespace cpu
}  // namespace vt
