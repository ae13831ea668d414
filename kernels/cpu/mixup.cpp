#include "kernels/cpu/mixup.h"

#include <algorithm>

namespace vt {
namespace cpu {

void mixup_images(float* images, int64_t B, int64_t n, float l, float m) {
#pragma omp parallel for
  for (int64_t i = 0; i < B / 2; ++i) {
    float* a = images + i * n;
    float* b = images + (B - 1 - i) * n;
    for (int64_t k = 0; k < n; ++k) {
      const float va = a[k], vb = b[k];
      a[k] = va * l + vb * m;
      b[k] = vb * l + va * m;
    }
  }
}

void cutmix_images(float* images, int64_t B, int64_t C, int64_t H, int64_t W, int y0, int y1, int x0, int x1) {
  const int64_t plane = H * W, sample = C * plane;
#pragma omp parallel for
  for (int64_t i = 0; i < B / 2; ++i) {
    float* a = images + i * sample;
    float* b = images + (B - 1 - i) * sample;
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = y0; y < y1; ++y) {
        const int64_t off = c * plane + y * W;
        std::swap_ranges(a + off + x0, a + off + x1, b + off + x0);
      }
  }
}

void mix_targets(const int32_t* labels, int64_t B, int64_t K, double lambda, double smoothing, float* targets) {
  const double off = smoothing / static_cast<double>(K), on = 1.0 - smoothing + off;
  for (int64_t i = 0; i < B; ++i) {
    const int64_t a = labels[i], b = labels[B - 1 - i];
    float* t = targets + i * K;
    for (int64_t k = 0; k < K; ++k) {
      const double y1 = k == a ? on : off, y2 = k == b ? on : off;
      // timm's y1*lam + y2*(1-lam); off entries give off exactly.
      t[k] = (k == a || k == b) ? static_cast<float>(y1 * lambda + y2 * (1.0 - lambda)) : static_cast<float>(off);
    }
  }
}

}  // namespace cpu
}  // namespace vt
