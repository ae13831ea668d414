#include "kernels/cpu/augment.h"

#include "kernels/augment_math.h"

namespace vt {
namespace cpu {

namespace am = augment_math;

void augment_step(const uint8_t* in, const AugmentStepArgs* args, uint8_t* out, int64_t N, int H, int W) {
  const int64_t per = static_cast<int64_t>(H) * W * 3;
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t n = 0; n < N; ++n) {
    const uint8_t* img = in + n * per;
    const AugmentStepArgs& a = args[n];
    // The per-image statistics the step reads (kernels/augment_math.h).
    uint8_t lut[3 * 256];
    int mean = 0;
    if (am::needs_histograms(a.kind)) {
      int32_t h[3][256] = {};
      for (int64_t i = 0; i < per; i += 3) ++h[0][img[i]], ++h[1][img[i + 1]], ++h[2][img[i + 2]];
      for (int c = 0; c < 3; ++c) {
        if (a.kind == kAugAutoContrast) am::autocontrast_lut(h[c], lut + 256 * c);
        else am::equalize_lut(h[c], lut + 256 * c);
      }
    }
    if (a.kind == kAugContrast) {
      uint64_t sum = 0;
      for (int64_t i = 0; i < per; i += 3) sum += am::gray(img[i], img[i + 1], img[i + 2]);
      mean = am::contrast_mean(sum, H, W);
    }
    uint8_t* o = out + n * per;
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) am::step_pixel(img, H, W, y, x, a, lut, mean, o + (static_cast<int64_t>(y) * W + x) * 3);
  }
}

void augment_erase(float* out, const AugmentEraseArgs* args, int64_t N, int H, int W) {
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t n = 0; n < N; ++n) {
    const AugmentEraseArgs& e = args[n];
    uint64_t k = 0;
    for (int c = 0; c < 3; ++c)
      for (int y = e.top; y < e.top + e.height; ++y) {
        float* row = out + ((n * 3 + c) * H + y) * static_cast<int64_t>(W);
        for (int x = e.left; x < e.left + e.width; ++x) row[x] = am::erase_value(e, k++);
      }
  }
}

}  // namespace cpu
}  // namespace vt
