// The per-pixel and per-histogram arithmetic of DeiT's RandAugment ops
// (timm 0.3.2 auto_augment.py, rand-m9-mstd0.5-inc1) as Pillow computes it,
// written once for every place that applies them: data_pipeline/
// randaugment.cpp (the host's cv::Mat ops), kernels/cpu/augment.cpp (the
// batched CPU twins) and kernels/cuda/augment.cu (the CUDA twins), so the
// three agree bit for bit. Integer ops are exact everywhere; float ones
// round each product and sum separately (kernels/rounded_math.h), in
// Pillow's order. Header only, callable from host and CUDA device code.
#pragma once
#include <cstdint>

#include "core/philox_block.h"  // VT_HOST_DEVICE
#include "kernels/augment_args.h"
#include "kernels/rounded_math.h"

namespace vt {
namespace augment_math {

// ImageOps.posterize: keep the top `bits` bits (1..8).
VT_HOST_DEVICE inline uint8_t posterize(int v, int bits) {
  return static_cast<uint8_t>(v & ~((1 << (8 - bits)) - 1));
}
// ImageOps.solarize: v >= threshold -> 255 - v (threshold 0: invert).
VT_HOST_DEVICE inline uint8_t solarize(int v, int threshold) {
  return static_cast<uint8_t>(v < threshold ? v : 255 - v);
}
// timm solarize_add: v < threshold -> min(255, v + add).
VT_HOST_DEVICE inline uint8_t solarize_add(int v, int add, int threshold) {
  return static_cast<uint8_t>(v < threshold ? (v + add < 255 ? v + add : 255) : v);
}

// ImageOps.autocontrast(cutoff=0) of one band from its histogram: map
// [lo, hi] (the first and last non-empty bins) onto [0, 255]; identity
// when hi <= lo. `Count` is any integer type.
template <typename Count>
VT_HOST_DEVICE inline void autocontrast_lut(const Count* h, uint8_t* lut) {
  int lo = 0, hi = 255;
  while (lo < 256 && h[lo] == 0) ++lo;
  while (hi >= 0 && h[hi] == 0) --hi;
  for (int i = 0; i < 256; ++i) {
    if (hi <= lo) {
      lut[i] = static_cast<uint8_t>(i);
    } else {
      // Pillow: scale = 255 / (hi - lo), offset = -lo * scale, int(i * scale + offset), in double.
      const double scale = rounded::div(255.0, static_cast<double>(hi - lo));
      const double offset = rounded::mul(static_cast<double>(-lo), scale);
      const int v = static_cast<int>(rounded::add(rounded::mul(static_cast<double>(i), scale), offset));
      lut[i] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
    }
  }
}

// ImageOps.equalize of one band: step = (pixels - pixels of the last
// non-empty bin) // 255; identity when step is 0 (or one bin is used);
// else lut[i] = min(255, (step // 2 + sum of bins below i) // step).
template <typename Count>
VT_HOST_DEVICE inline void equalize_lut(const Count* h, uint8_t* lut) {
  int64_t total = 0, last = 0, nonzero = 0;
  for (int i = 0; i < 256; ++i)
    if (h[i]) {
      total += h[i];
      last = h[i];
      ++nonzero;
    }
  const int64_t step = nonzero <= 1 ? 0 : (total - last) / 255;
  if (step == 0) {
    for (int i = 0; i < 256; ++i) lut[i] = static_cast<uint8_t>(i);
    return;
  }
  int64_t n = step / 2;
  for (int i = 0; i < 256; ++i) {
    const int64_t v = n / step;
    lut[i] = static_cast<uint8_t>(v < 255 ? v : 255);
    n += h[i];
  }
}

// Pillow's L of an RGB pixel (Convert.c): (19595 R + 38470 G + 7471 B + 0x8000) >> 16.
VT_HOST_DEVICE inline uint8_t gray(int r, int g, int b) {
  return static_cast<uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16);
}

// Image.blend (libImaging/Blend.c) of one value: a + factor * (b - a) in
// float, truncated, clipped to [0, 255]. ImageEnhance blends the degenerate
// image `a` towards the image `b`.
VT_HOST_DEVICE inline uint8_t blend(int a, int b, float factor) {
  const float t = rounded::add(static_cast<float>(a), rounded::mul(factor, static_cast<float>(b - a)));
  return t <= 0.0f ? 0 : t >= 255.0f ? 255 : static_cast<uint8_t>(t);
}

// ImageEnhance.Contrast's degenerate value: the gray image's mean, rounded
// (int(sum / n + 0.5) in double, from the exact integer sum).
VT_HOST_DEVICE inline int contrast_mean(uint64_t gray_sum, int H, int W) {
  return static_cast<int>(rounded::add(
      rounded::div(static_cast<double>(gray_sum), rounded::mul(static_cast<double>(H), static_cast<double>(W))), 0.5));
}

// ImageFilter.SMOOTH (libImaging/Filter.c) at an interior value: the 8
// neighbours' sum / 13 + centre * 5 / 13 in float, rounded, clipped.
VT_HOST_DEVICE inline uint8_t smooth(int sum8, int centre) {
  const float k = 1.0f / 13.0f, kc = 5.0f / 13.0f;
  const float ss = rounded::add(rounded::mul(static_cast<float>(sum8), k), rounded::mul(static_cast<float>(centre), kc));
  return ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : static_cast<uint8_t>(rounded::add(ss, 0.5f));
}

// Keys' cubic convolution with a = -1 (Pillow's Geometry.c BICUBIC):
// p1 = v2, p2 = v3 - v1, p3 = 2 (v1 - v2) + v3 - v4, p4 = v2 - v1 - v3 + v4,
// p1 + d (p2 + d (p3 + d p4)) in double; data_pipeline/resample.cpp's
// affine_pil computes the same operations (its AVX2 lanes too).
VT_HOST_DEVICE inline double cubic(double v1, double v2, double v3, double v4, double d) {
  const double d12 = rounded::sub(v1, v2);
  const double p2 = rounded::sub(v3, v1), p3 = rounded::sub(rounded::add(rounded::add(d12, d12), v3), v4), p4 = rounded::add(rounded::sub(rounded::sub(v2, v1), v3), v4);
  return rounded::add(v2, rounded::mul(d, rounded::add(p2, rounded::mul(d, rounded::add(p3, rounded::mul(d, p4))))));
}

// Image.transform(AFFINE, BICUBIC, fillcolor) at output pixel (x, y) of an
// H x W RGB image (affine_pil): the source point m * (x + .5, y + .5, 1);
// outside [0, W) x [0, H): fill; else bicubic over the 4 x 4 neighbours
// (edges clamped), truncated to int, clipped.
VT_HOST_DEVICE inline void affine_pixel(const uint8_t* img, int H, int W, int y, int x, const double* m,
                                        const uint8_t* fill, uint8_t* o) {
  const double xo = x + 0.5, yo = y + 0.5;
  double xin = rounded::add(rounded::add(rounded::mul(m[0], xo), rounded::mul(m[1], yo)), m[2]);
  double yin = rounded::add(rounded::add(rounded::mul(m[3], xo), rounded::mul(m[4], yo)), m[5]);
  if (xin < 0.0 || xin >= W || yin < 0.0 || yin >= H) {
    o[0] = fill[0], o[1] = fill[1], o[2] = fill[2];
    return;
  }
  xin = rounded::sub(xin, 0.5);
  yin = rounded::sub(yin, 0.5);
  const int xi = static_cast<int>(floor(xin)), yi = static_cast<int>(floor(yin));
  const double dx = rounded::sub(xin, xi), dy = rounded::sub(yin, yi);
  int xs[4], ys[4];
  for (int i = 0; i < 4; ++i) {
    const int xx = xi - 1 + i, yy = yi - 1 + i;
    xs[i] = 3 * (xx < 0 ? 0 : xx >= W ? W - 1 : xx);
    ys[i] = yy < 0 ? 0 : yy >= H ? H - 1 : yy;
  }
  for (int c = 0; c < 3; ++c) {
    double v[4];
    for (int j = 0; j < 4; ++j) {
      const uint8_t* r = img + static_cast<int64_t>(ys[j]) * W * 3;
      v[j] = cubic(r[xs[0] + c], r[xs[1] + c], r[xs[2] + c], r[xs[3] + c], dx);
    }
    const int vi = static_cast<int>(cubic(v[0], v[1], v[2], v[3], dy));
    o[c] = static_cast<uint8_t>(vi < 0 ? 0 : vi > 255 ? 255 : vi);
  }
}

// Whether a step reads per-image statistics first (histograms: the luts of
// AutoContrast / Equalize; the gray sum: Contrast).
VT_HOST_DEVICE inline bool needs_histograms(int kind) { return kind == kAugAutoContrast || kind == kAugEqualize; }

// Output pixel (y, x) of step `a` on the H x W RGB image `img` (HWC, rows
// contiguous): o[0..2]. lut: the sample's [3][256] luts (AutoContrast /
// Equalize); mean: contrast_mean (Contrast).
VT_HOST_DEVICE inline void step_pixel(const uint8_t* img, int H, int W, int y, int x, const AugmentStepArgs& a,
                                      const uint8_t* lut, int mean, uint8_t* o) {
  const int64_t row = static_cast<int64_t>(y) * W * 3;
  const uint8_t* p = img + row + 3 * x;
  switch (a.kind) {
    case kAugFlip: {
      const uint8_t* q = img + row + 3 * (W - 1 - x);
      o[0] = q[0], o[1] = q[1], o[2] = q[2];
      return;
    }
    case kAugAutoContrast:
    case kAugEqualize:
      for (int c = 0; c < 3; ++c) o[c] = lut[c * 256 + p[c]];
      return;
    case kAugPosterize:
      for (int c = 0; c < 3; ++c) o[c] = a.ival >= 8 ? p[c] : posterize(p[c], a.ival);
      return;
    case kAugSolarize:
      for (int c = 0; c < 3; ++c) o[c] = solarize(p[c], a.ival);
      return;
    case kAugSolarizeAdd:
      for (int c = 0; c < 3; ++c) o[c] = solarize_add(p[c], a.ival, 128);
      return;
    case kAugColor: {
      const int g = gray(p[0], p[1], p[2]);
      for (int c = 0; c < 3; ++c) o[c] = blend(g, p[c], a.factor);
      return;
    }
    case kAugContrast:
      for (int c = 0; c < 3; ++c) o[c] = blend(mean, p[c], a.factor);
      return;
    case kAugBrightness:
      for (int c = 0; c < 3; ++c) o[c] = blend(0, p[c], a.factor);
      return;
    case kAugSharpness:
      for (int c = 0; c < 3; ++c) {
        int deg = p[c];  // the one-pixel border is kept
        if (y > 0 && y + 1 < H && x > 0 && x + 1 < W) {
          const uint8_t* u = p - 3 * W;
          const uint8_t* d = p + 3 * W;
          const int sum8 = u[c - 3] + u[c] + u[c + 3] + p[c - 3] + p[c + 3] + d[c - 3] + d[c] + d[c + 3];
          deg = smooth(sum8, p[c]);
        }
        o[c] = blend(deg, p[c], a.factor);
      }
      return;
    case kAugAffine:
      affine_pixel(img, H, W, y, x, a.m, a.fill, o);
      return;
    default:
      o[0] = p[0], o[1] = p[1], o[2] = p[2];
      return;
  }
}

// RandomErasing's value k (C, y, x order inside the box) of a sample.
VT_HOST_DEVICE inline float erase_value(const AugmentEraseArgs& e, uint64_t k) {
  return static_cast<float>(philox_normal_at(e.seed, e.stream, e.block, e.lane, k));
}

}  // namespace augment_math
}  // namespace vt
