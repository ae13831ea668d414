#include "kernels/cpu/image_prep.h"

namespace vt {
namespace cpu {

void normalize_u8_hwc(const uint8_t* in, const float* a, const float* b, float* out, int64_t B, int64_t H, int64_t W,
                      int64_t C) {
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < B; ++n)
    for (int64_t y = 0; y < H; ++y) {
      const uint8_t* row = in + (n * H + y) * W * C;
      for (int64_t c = 0; c < C; ++c) {
        float* o = out + ((n * C + c) * H + y) * W;
        for (int64_t x = 0; x < W; ++x) o[x] = static_cast<float>(row[x * C + c]) * a[c] + b[c];
      }
    }
}

}  // namespace cpu
}  // namespace vt
