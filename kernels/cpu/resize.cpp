#include "kernels/cpu/resize.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vt {
namespace cpu {
namespace {

// Source indices and weights along one axis, computed in float exactly as
// ATen's area_pixel_compute_source_index / guard_index_and_lambda do.
void axis_taps(int64_t in, int64_t out, std::vector<int64_t>& i0, std::vector<int64_t>& i1,
               std::vector<float>& l0, std::vector<float>& l1) {
  i0.resize(out), i1.resize(out), l0.resize(out), l1.resize(out);
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  for (int64_t d = 0; d < out; ++d) {
    float src = scale * (static_cast<float>(d) + 0.5f) - 0.5f;
    if (src < 0.f) src = 0.f;
    const int64_t a = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    const float lam = std::min(std::max(src - static_cast<float>(a), 0.f), 1.f);
    i0[d] = a;
    i1[d] = a < in - 1 ? a + 1 : a;
    l1[d] = lam;
    l0[d] = 1.f - lam;
  }
}

}  // namespace

void resize_bilinear(const float* x, float* y, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  std::vector<int64_t> y0, y1, x0, x1;
  std::vector<float> ly0, ly1, lx0, lx1;
  axis_taps(h, oh, y0, y1, ly0, ly1);
  axis_taps(w, ow, x0, x1, lx0, lx1);
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t p = 0; p < planes; ++p) {
    for (int64_t i = 0; i < oh; ++i) {
      const float* r0 = x + (p * h + y0[i]) * w;
      const float* r1 = x + (p * h + y1[i]) * w;
      float* out = y + (p * oh + i) * ow;
      for (int64_t j = 0; j < ow; ++j) {
        const float t0 = r0[x0[j]] * lx0[j] + r0[x1[j]] * lx1[j];
        const float t1 = r1[x0[j]] * lx0[j] + r1[x1[j]] * lx1[j];
        out[j] = t0 * ly0[i] + t1 * ly1[i];
      }
    }
  }
}

}  // namespace cpu
}  // namespace vt
