#include "kernels/conv_cudnn_split.h"

#include <algorithm>
#include <climits>

namespace vt {

namespace {

// One of the tensors a call hands cuDNN: the dims of one image (dims[0] = 1)
// and the strides.
struct View {
  int64_t dims[4];
  int64_t strides[4];
};

View packed(int64_t c, int64_t h, int64_t w) { return {{1, c, h, w}, {c * h * w, h * w, w, 1}}; }

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

// The most images of `t` within max_elements; 0 when one image does not fit.
int64_t max_images_of(const View& t, int64_t max_elements) {
  int64_t numel = 1, span = 1;
  for (int i = 1; i < 4; ++i) {
    if (!fits_int(t.dims[i]) || !fits_int(t.strides[i] < 0 ? -t.strides[i] : t.strides[i])) return 0;
    numel *= t.dims[i];
    span += (t.dims[i] - 1) * (t.strides[i] < 0 ? -t.strides[i] : t.strides[i]);
  }
  const int64_t one = std::max(numel, span);  // one image's size
  if (one > max_elements) return 0;
  // Each further image adds the N stride to the span (its elements to the
  // count, when the N stride is smaller, e.g. an N of 1 described with a 0).
  const int64_t s0 = std::max(t.strides[0] < 0 ? -t.strides[0] : t.strides[0], numel);
  if (!fits_int(s0)) return 1;  // only one image per call: its N stride is then never used
  return (max_elements - one) / s0 + 1;
}

}  // namespace

CudnnPadGeometry cudnn_pad_geometry(const Conv2dDesc& d) {
  CudnnPadGeometry g;
  // Input rows / columns the output reads, padding included.
  g.hp = (d.oh - 1) * d.sh + d.dh * (d.kh - 1) + 1, g.wp = (d.ow - 1) * d.sw + d.dw * (d.kw - 1) + 1;
  // cuDNN pads ph rows on top and bottom; its output size is then
  // floor((h + 2 ph - dh (kh - 1) - 1) / sh) + 1, and its rows are ours when
  // that is oh (the top padding, which fixes every row, is the same).
  const bool sym = (d.h + 2 * d.ph - d.dh * (d.kh - 1) - 1) / d.sh + 1 == d.oh &&
                   (d.w + 2 * d.pw - d.dw * (d.kw - 1) - 1) / d.sw + 1 == d.ow &&
                   d.h + 2 * d.ph >= d.dh * (d.kh - 1) + 1 && d.w + 2 * d.pw >= d.dw * (d.kw - 1) + 1;
  g.pad = !sym;
  g.h_used = std::min<int64_t>(d.h, g.hp - d.ph), g.w_used = std::min<int64_t>(d.w, g.wp - d.pw);
  return g;
}

int64_t cudnn_conv_max_images(const Conv2dDesc& d, int64_t max_elements) {
  if (d.n < 1) return 0;
  const CudnnPadGeometry g = cudnn_pad_geometry(d);
  if (!fits_int(d.o) || !fits_int(d.kh) || !fits_int(d.kw) || !fits_int(d.c / (d.groups > 0 ? d.groups : 1)))
    return 0;
  std::vector<View> views;
  const View x{{1, d.c, g.pad ? g.h_used : d.h, g.pad ? g.w_used : d.w},
               {d.x_strides[0], d.x_strides[1], d.x_strides[2], d.x_strides[3]}};
  views.push_back(x);
  if (g.pad) views.push_back(packed(d.c, g.hp, g.wp));
  views.push_back({{1, d.o, d.oh, d.ow}, {d.y_strides[0], d.y_strides[1], d.y_strides[2], d.y_strides[3]}});
  views.push_back(packed(d.o, d.oh, d.ow));
  int64_t m = d.n;
  for (const View& v : views) m = std::min(m, max_images_of(v, max_elements));
  return m;
}

std::vector<int64_t> cudnn_conv_chunks(int64_t n, int64_t max_images) {
  if (n < 1 || max_images < 1) return {};
  const int64_t k = (n + max_images - 1) / max_images, base = n / k, extra = n % k;
  std::vector<int64_t> c(static_cast<size_t>(k), base);
  for (int64_t i = 0; i < extra; ++i) ++c[static_cast<size_t>(i)];
  return c;
}

}  // namespace vt
