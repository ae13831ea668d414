#include "kernels/cpu/layernorm.h"

#include <algorithm>
#include <cmath>

namespace vt {
namespace cpu {

void layernorm_forward(const float* x, const float* weight, const float* bias, float eps, int64_t rows,
                       int64_t d, float* y, float* mean, float* rstd) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * d;
    float* yr = y + r * d;
    // Two passes in double: the centred variance avoids the cancellation of
    // E[x^2] - E[x]^2 when |mean| >> std (residual streams grow with depth).
    double s = 0.0;
#pragma omp simd reduction(+ : s)
    for (int64_t j = 0; j < d; ++j) s += xr[j];
    const double mu = d > 0 ? s / static_cast<double>(d) : 0.0;
    double ss = 0.0;
#pragma omp simd reduction(+ : ss)
    for (int64_t j = 0; j < d; ++j) {
      const double c = xr[j] - mu;
      ss += c * c;
    }
    const double var = d > 0 ? ss / static_cast<double>(d) : 0.0;
    const float muf = static_cast<float>(mu);
    const float rs = static_cast<float>(1.0 / std::sqrt(var + static_cast<double>(eps)));
    if (mean) mean[r] = muf;
    if (rstd) rstd[r] = rs;
    if (weight && bias) {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) yr[j] = (xr[j] - muf) * rs * weight[j] + bias[j];
    } else if (weight) {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) yr[j] = (xr[j] - muf) * rs * weight[j];
    } else if (bias) {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) yr[j] = (xr[j] - muf) * rs + bias[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) yr[j] = (xr[j] - muf) * rs;
    }
  }
}

namespace {

// dweight += sum_r dy * x_hat, dbias += sum_r dy, over column blocks so each
// column is summed in row order whatever the thread count.
void layernorm_param_grads(const float* dy, const float* x, const float* mean, const float* rstd, int64_t rows,
                           int64_t d, float* dweight, float* dbias) {
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (d + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kBlock, n = std::min(d, j0 + kBlock) - j0;
    double gw[kBlock] = {}, gb[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* dyr = dy + r * d + j0;
      const float* xr = x + r * d + j0;
      const float mu = mean[r], rs = rstd[r];
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) {
        gw[j] += static_cast<double>(dyr[j] * ((xr[j] - mu) * rs));
        gb[j] += static_cast<double>(dyr[j]);
      }
    }
    if (dweight)
      for (int64_t j = 0; j < n; ++j) dweight[j0 + j] += static_cast<float>(gw[j]);
    if (dbias)
      for (int64_t j = 0; j < n; ++j) dbias[j0 + j] += static_cast<float>(gb[j]);
  }
}

}  // namespace

void layernorm_backward(const float* dy, const float* x, const float* weight, const float* mean,
                        const float* rstd, int64_t rows, int64_t d, float* dx, bool accumulate_dx,
                        float* dweight, float* dbias) {
  // Parameter gradients first: dx may alias dy and would overwrite it.
  if (dweight || dbias) layernorm_param_grads(dy, x, mean, rstd, rows, d, dweight, dbias);
  if (!dx || d == 0) return;
  const float inv_d = 1.0f / static_cast<float>(d);
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < rows; ++r) {
    const float* dyr = dy + r * d;
    const float* xr = x + r * d;
    float* dxr = dx + r * d;
    const float mu = mean[r], rs = rstd[r];
    float sg = 0.0f, sgx = 0.0f;
    if (weight) {
#pragma omp simd reduction(+ : sg, sgx)
      for (int64_t j = 0; j < d; ++j) {
        const float g = dyr[j] * weight[j];
        sg += g;
        sgx += g * ((xr[j] - mu) * rs);
      }
    } else {
#pragma omp simd reduction(+ : sg, sgx)
      for (int64_t j = 0; j < d; ++j) {
        sg += dyr[j];
        sgx += dyr[j] * ((xr[j] - mu) * rs);
      }
    }
    const float a = sg * inv_d, b = sgx * inv_d;
    if (accumulate_dx) {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) {
        const float g = weight ? dyr[j] * weight[j] : dyr[j];
        dxr[j] += rs * (g - a - (xr[j] - mu) * rs * b);
      }
    } else {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) {
        const float g = weight ? dyr[j] * weight[j] : dyr[j];
        dxr[j] = rs * (g - a - (xr[j] - mu) * rs * b);
      }
    }
  }
}

}  // namespace cpu
}  // namespace vt
