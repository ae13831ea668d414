#include "data_pipeline/randaugment.h"

#include <algorithm>
#include <cmath>

#include "data_pipeline/resample.h"

namespace vt {

const char* randaug_op_name(RandAugOp op) {
  static const char* names[kNumRandAugOps] = {
      "AutoContrast", "Equalize", "Invert", "Rotate", "PosterizeIncreasing", "SolarizeIncreasing",
      "SolarizeAdd", "ColorIncreasing", "ContrastIncreasing", "BrightnessIncreasing", "SharpnessIncreasing",
      "ShearX", "ShearY", "TranslateXRel", "TranslateYRel"};
  return names[static_cast<int>(op)];
}

cv::Mat pil_point(const cv::Mat& img, const std::array<uint8_t, 256>& lut) {
  cv::Mat out(img.rows, img.cols, CV_8UC3);
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* s = img.ptr<uint8_t>(y);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols * 3; ++x) o[x] = lut[s[x]];
  }
  return out;
}

namespace {

// Per-channel lut image transform.
cv::Mat point3(const cv::Mat& img, const std::array<std::array<uint8_t, 256>, 3>& luts) {
  cv::Mat out(img.rows, img.cols, CV_8UC3);
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* s = img.ptr<uint8_t>(y);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols * 3; x += 3) {
      o[x] = luts[0][s[x]];
      o[x + 1] = luts[1][s[x + 1]];
      o[x + 2] = luts[2][s[x + 2]];
    }
  }
  return out;
}

std::array<std::array<int64_t, 256>, 3> histograms(const cv::Mat& img) {
  std::array<std::array<int64_t, 256>, 3> h{};
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* s = img.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols * 3; x += 3) {
      ++h[0][s[x]];
      ++h[1][s[x + 1]];
      ++h[2][s[x + 2]];
    }
  }
  return h;
}

}  // namespace

cv::Mat pil_autocontrast(const cv::Mat& img) {
  // ImageOps.autocontrast(cutoff=0): per band, map [lo, hi] to [0, 255].
  const auto h = histograms(img);
  std::array<std::array<uint8_t, 256>, 3> luts;
  for (int c = 0; c < 3; ++c) {
    int lo = 0, hi = 255;
    while (lo < 256 && h[c][lo] == 0) ++lo;
    while (hi >= 0 && h[c][hi] == 0) --hi;
    for (int i = 0; i < 256; ++i) {
      if (hi <= lo) {
        luts[c][i] = static_cast<uint8_t>(i);
      } else {
        const double scale = 255.0 / (hi - lo), offset = -lo * scale;
        int v = static_cast<int>(i * scale + offset);
        luts[c][i] = static_cast<uint8_t>(std::clamp(v, 0, 255));
      }
    }
  }
  return point3(img, luts);
}

cv::Mat pil_equalize(const cv::Mat& img) {
  // ImageOps.equalize: step = (count - count of the last non-empty bin) // 255.
  const auto h = histograms(img);
  std::array<std::array<uint8_t, 256>, 3> luts;
  for (int c = 0; c < 3; ++c) {
    int64_t total = 0, last = 0, nonzero = 0;
    for (int i = 0; i < 256; ++i)
      if (h[c][i]) {
        total += h[c][i];
        last = h[c][i];
        ++nonzero;
      }
    const int64_t step = nonzero <= 1 ? 0 : (total - last) / 255;
    if (step == 0) {
      for (int i = 0; i < 256; ++i) luts[c][i] = static_cast<uint8_t>(i);
      continue;
    }
    int64_t n = step / 2;
    for (int i = 0; i < 256; ++i) {
      luts[c][i] = static_cast<uint8_t>(std::min<int64_t>(n / step, 255));
      n += h[c][i];
    }
  }
  return point3(img, luts);
}

std::array<uint8_t, 256> posterize_lut(int bits) {
  std::array<uint8_t, 256> l;
  const int mask = ~((1 << (8 - bits)) - 1);
  for (int i = 0; i < 256; ++i) l[i] = static_cast<uint8_t>(i & mask);
  return l;
}

std::array<uint8_t, 256> solarize_lut(int threshold) {
  std::array<uint8_t, 256> l;
  for (int i = 0; i < 256; ++i) l[i] = static_cast<uint8_t>(i < threshold ? i : 255 - i);
  return l;
}

std::array<uint8_t, 256> solarize_add_lut(int add, int threshold) {
  std::array<uint8_t, 256> l;
  for (int i = 0; i < 256; ++i) l[i] = static_cast<uint8_t>(i < threshold ? std::min(255, i + add) : i);
  return l;
}

cv::Mat pil_gray(const cv::Mat& img) {
  cv::Mat g(img.rows, img.cols, CV_8UC1);
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* s = img.ptr<uint8_t>(y);
    uint8_t* o = g.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols; ++x)
      o[x] = static_cast<uint8_t>((s[3 * x] * 19595 + s[3 * x + 1] * 38470 + s[3 * x + 2] * 7471 + 0x8000) >> 16);
  }
  return g;
}

cv::Mat pil_blend(const cv::Mat& degenerate, const cv::Mat& img, float factor) {
  // libImaging/Blend.c: float arithmetic, truncation, clipping.
  cv::Mat out(img.rows, img.cols, CV_8UC3);
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* a = degenerate.ptr<uint8_t>(y);
    const uint8_t* b = img.ptr<uint8_t>(y);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols * 3; ++x) {
      const float t = static_cast<float>(static_cast<int>(a[x]) + factor * (static_cast<int>(b[x]) - static_cast<int>(a[x])));
      o[x] = t <= 0.0f ? 0 : t >= 255.0f ? 255 : static_cast<uint8_t>(t);
    }
  }
  return out;
}

cv::Mat pil_color(const cv::Mat& img, float factor) {
  cv::Mat g = pil_gray(img), deg;
  cv::Mat planes[3] = {g, g, g};
  cv::merge(planes, 3, deg);
  return pil_blend(deg, img, factor);
}

cv::Mat pil_contrast(const cv::Mat& img, float factor) {
  const cv::Mat g = pil_gray(img);
  double sum = 0;
  for (int y = 0; y < g.rows; ++y)
    for (int x = 0; x < g.cols; ++x) sum += g.at<uint8_t>(y, x);
  const int mean = static_cast<int>(sum / (static_cast<double>(g.rows) * g.cols) + 0.5);
  const cv::Mat deg(img.rows, img.cols, CV_8UC3, cv::Scalar(mean, mean, mean));
  return pil_blend(deg, img, factor);
}

cv::Mat pil_brightness(const cv::Mat& img, float factor) {
  return pil_blend(cv::Mat::zeros(img.rows, img.cols, CV_8UC3), img, factor);
}

cv::Mat pil_sharpness(const cv::Mat& img, float factor) {
  // ImageFilter.SMOOTH: 3x3 kernel (1 1 1 / 1 5 1 / 1 1 1) / 13 in float,
  // rounded; the one-pixel border is copied unchanged (libImaging/Filter.c).
  cv::Mat deg = img.clone();
  const float k = 1.0f / 13.0f, kc = 5.0f / 13.0f;
  for (int y = 1; y + 1 < img.rows; ++y) {
    const uint8_t* r0 = img.ptr<uint8_t>(y - 1);
    const uint8_t* r1 = img.ptr<uint8_t>(y);
    const uint8_t* r2 = img.ptr<uint8_t>(y + 1);
    uint8_t* o = deg.ptr<uint8_t>(y);
    for (int x = 1; x + 1 < img.cols; ++x)
      for (int c = 0; c < 3; ++c) {
        const int i = 3 * x + c;
        const float ss = (r0[i - 3] + r0[i] + r0[i + 3] + r1[i - 3] + r1[i + 3] + r2[i - 3] + r2[i] + r2[i + 3]) * k +
                         r1[i] * kc;
        o[i] = ss <= 0.0f ? 0 : ss >= 255.0f ? 255 : static_cast<uint8_t>(ss + 0.5f);
      }
  }
  return pil_blend(deg, img, factor);
}

cv::Mat pil_rotate(const cv::Mat& img, double degrees, const cv::Vec3b& fill) {
  // Image.rotate(expand=False): about the centre (w/2, h/2), matrix entries
  // rounded to 15 decimals like Pillow.
  const double w = img.cols, h = img.rows;
  const double a = -degrees * M_PI / 180.0;
  auto r15 = [](double v) { return std::round(v * 1e15) / 1e15; };
  std::array<double, 6> m = {r15(std::cos(a)), r15(std::sin(a)), 0.0, r15(-std::sin(a)), r15(std::cos(a)), 0.0};
  const double cx = w / 2.0, cy = h / 2.0;
  m[2] = m[0] * -cx + m[1] * -cy + cx;
  m[5] = m[3] * -cx + m[4] * -cy + cy;
  return affine_pil(img, m, AffineFilter::Bicubic, fill);
}

cv::Mat randaug_apply(const cv::Mat& img, RandAugOp op, double level, int sign, const RandAugmentParams& p) {
  const double frac = level / p.max_level;
  const double s = sign < 0 ? -1.0 : 1.0;
  auto enhance = [&]() { return static_cast<float>(1.0 + s * frac * 0.9); };
  switch (op) {
    case RandAugOp::AutoContrast: return pil_autocontrast(img);
    case RandAugOp::Equalize: return pil_equalize(img);
    case RandAugOp::Invert: return pil_point(img, solarize_lut(0));
    case RandAugOp::Rotate: return pil_rotate(img, s * frac * 30.0, p.fill);
    case RandAugOp::PosterizeIncreasing: {
      const int bits = 4 - static_cast<int>(frac * 4);
      return bits >= 8 ? img : pil_point(img, posterize_lut(bits));
    }
    case RandAugOp::SolarizeIncreasing: return pil_point(img, solarize_lut(256 - static_cast<int>(frac * 256)));
    case RandAugOp::SolarizeAdd: return pil_point(img, solarize_add_lut(static_cast<int>(frac * 110)));
    case RandAugOp::ColorIncreasing: return pil_color(img, enhance());
    case RandAugOp::ContrastIncreasing: return pil_contrast(img, enhance());
    case RandAugOp::BrightnessIncreasing: return pil_brightness(img, enhance());
    case RandAugOp::SharpnessIncreasing: return pil_sharpness(img, enhance());
    case RandAugOp::ShearX: return affine_pil(img, {1, s * frac * 0.3, 0, 0, 1, 0}, AffineFilter::Bicubic, p.fill);
    case RandAugOp::ShearY: return affine_pil(img, {1, 0, 0, s * frac * 0.3, 1, 0}, AffineFilter::Bicubic, p.fill);
    case RandAugOp::TranslateXRel:
      return affine_pil(img, {1, 0, s * frac * 0.45 * img.cols, 0, 1, 0}, AffineFilter::Bicubic, p.fill);
    case RandAugOp::TranslateYRel:
      return affine_pil(img, {1, 0, 0, 0, 1, s * frac * 0.45 * img.rows}, AffineFilter::Bicubic, p.fill);
  }
  return img;
}

cv::Mat rand_augment(const cv::Mat& img, Philox& rng, const RandAugmentParams& p) {
  // Draw the op list first (timm draws all ops, then applies them in order).
  std::array<int, 16> ops{};
  const int n = std::min(p.num_ops, 16);
  for (int i = 0; i < n; ++i) ops[i] = static_cast<int>(rng.integer(0, kNumRandAugOps - 1));
  cv::Mat cur = img;
  for (int i = 0; i < n; ++i) {
    if (rng.uniform_double() >= p.prob) continue;  // timm: skip when random() > prob
    double m = p.magnitude;
    if (p.magnitude_std > 0) m = rng.normal(m, p.magnitude_std);
    m = std::min(p.max_level, std::max(0.0, m));
    const int sign = rng.uniform_double() < 0.5 ? -1 : 1;
    cur = randaug_apply(cur, static_cast<RandAugOp>(ops[i]), m, sign, p);
  }
  return cur;
}

}  // namespace vt
