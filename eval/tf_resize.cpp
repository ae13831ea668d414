#include "eval/tf_resize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace vt {
namespace {

struct Tap {
  int64_t lo, hi;
  float t;
};

// compute_interpolation_weights with the legacy scaler.
std::vector<Tap> taps(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<Tap> v(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float src = static_cast<float>(i) * scale;
    const float f = std::floor(src);
    v[i].lo = std::max<int64_t>(static_cast<int64_t>(f), 0);
    v[i].hi = std::min<int64_t>(static_cast<int64_t>(std::ceil(src)), in - 1);
    v[i].t = src - f;
  }
  return v;
}

}  // namespace

void tf1_resize_bilinear_u8(const uint8_t* src, int64_t h, int64_t w, float* dst, int64_t oh, int64_t ow) {
  if (h < 1 || w < 1 || oh < 1 || ow < 1)
    throw std::invalid_argument("tf1_resize_bilinear_u8: sizes must be positive, got " + std::to_string(h) + "x" +
                                std::to_string(w) + " -> " + std::to_string(oh) + "x" + std::to_string(ow));
  const std::vector<Tap> ys = taps(h, oh), xs = taps(w, ow);
  const int64_t plane = oh * ow;
  for (int64_t y = 0; y < oh; ++y) {
    const uint8_t* r0 = src + ys[y].lo * w * 3;
    const uint8_t* r1 = src + ys[y].hi * w * 3;
    const float ty = ys[y].t;
    for (int64_t x = 0; x < ow; ++x) {
      const int64_t a = xs[x].lo * 3, b = xs[x].hi * 3;
      const float tx = xs[x].t;
      for (int c = 0; c < 3; ++c) {
        const float tl = r0[a + c], tr = r0[b + c], bl = r1[a + c], br = r1[b + c];
        const float top = tl + (tr - tl) * tx;
        const float bottom = bl + (br - bl) * tx;
        dst[c * plane + y * ow + x] = top + (bottom - top) * ty;
      }
    }
  }
}

}  // namespace vt
