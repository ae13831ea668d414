#include "data_pipeline/randaugment.h"

#include <algorithm>
#include <cmath>

#include "data_pipeline/resample.h"
#include "kernels/augment_math.h"

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
  for (int c = 0; c < 3; ++c) augment_math::autocontrast_lut(h[c].data(), luts[c].data());
  return point3(img, luts);
}

cv::Mat pil_equalize(const cv::Mat& img) {
  // ImageOps.equalize: step = (count - count of the last non-empty bin) // 255.
  const auto h = histograms(img);
  std::array<std::array<uint8_t, 256>, 3> luts;
  for (int c = 0; c < 3; ++c) augment_math::equalize_lut(h[c].data(), luts[c].data());
  return point3(img, luts);
}

std::array<uint8_t, 256> posterize_lut(int bits) {
  std::array<uint8_t, 256> l;
  for (int i = 0; i < 256; ++i) l[i] = augment_math::posterize(i, bits);
  return l;
}

std::array<uint8_t, 256> solarize_lut(int threshold) {
  std::array<uint8_t, 256> l;
  for (int i = 0; i < 256; ++i) l[i] = augment_math::solarize(i, threshold);
  return l;
}

std::array<uint8_t, 256> solarize_add_lut(int add, int threshold) {
  std::array<uint8_t, 256> l;
  for (int i = 0; i < 256; ++i) l[i] = augment_math::solarize_add(i, add, threshold);
  return l;
}

cv::Mat pil_gray(const cv::Mat& img) {
  cv::Mat g(img.rows, img.cols, CV_8UC1);
  for (int y = 0; y < img.rows; ++y) {
    const uint8_t* s = img.ptr<uint8_t>(y);
    uint8_t* o = g.ptr<uint8_t>(y);
    for (int x = 0; x < img.cols; ++x) o[x] = augment_math::gray(s[3 * x], s[3 * x + 1], s[3 * x + 2]);
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
    for (int x = 0; x < img.cols * 3; ++x) o[x] = augment_math::blend(a[x], b[x], factor);
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
  for (int y = 1; y + 1 < img.rows; ++y) {
    const uint8_t* r0 = img.ptr<uint8_t>(y - 1);
    const uint8_t* r1 = img.ptr<uint8_t>(y);
    const uint8_t* r2 = img.ptr<uint8_t>(y + 1);
    uint8_t* o = deg.ptr<uint8_t>(y);
    for (int x = 1; x + 1 < img.cols; ++x)
      for (int c = 0; c < 3; ++c) {
        const int i = 3 * x + c;
        const int sum8 = r0[i - 3] + r0[i] + r0[i + 3] + r1[i - 3] + r1[i + 3] + r2[i - 3] + r2[i] + r2[i + 3];
        o[i] = augment_math::smooth(sum8, r1[i]);
      }
  }
  return pil_blend(deg, img, factor);
}

std::array<double, 6> pil_rotate_matrix(int W, int H, double degrees) {
  // Image.rotate(expand=False): about the centre (w/2, h/2), matrix entries
  // rounded to 15 decimals like Pillow.
  const double w = W, h = H;
  const double a = -degrees * M_PI / 180.0;
  auto r15 = [](double v) { return std::round(v * 1e15) / 1e15; };
  std::array<double, 6> m = {r15(std::cos(a)), r15(std::sin(a)), 0.0, r15(-std::sin(a)), r15(std::cos(a)), 0.0};
  const double cx = w / 2.0, cy = h / 2.0;
  m[2] = m[0] * -cx + m[1] * -cy + cx;
  m[5] = m[3] * -cx + m[4] * -cy + cy;
  return m;
}

cv::Mat pil_rotate(const cv::Mat& img, double degrees, const cv::Vec3b& fill) {
  return affine_pil(img, pil_rotate_matrix(img.cols, img.rows, degrees), AffineFilter::Bicubic, fill);
}

AugmentStepArgs randaug_step_args(RandAugOp op, double level, int sign, int W, int H, const RandAugmentParams& p) {
  // timm's _LEVEL_TO_ARG of the "increasing" policy.
  const double frac = level / p.max_level;
  const double s = sign < 0 ? -1.0 : 1.0;
  AugmentStepArgs a;
  a.factor = static_cast<float>(1.0 + s * frac * 0.9);  // the enhance ops
  for (int c = 0; c < 3; ++c) a.fill[c] = p.fill[c];
  auto affine = [&a](std::array<double, 6> m) {
    a.kind = kAugAffine;
    for (int i = 0; i < 6; ++i) a.m[i] = m[i];
  };
  switch (op) {
    case RandAugOp::AutoContrast: a.kind = kAugAutoContrast; break;
    case RandAugOp::Equalize: a.kind = kAugEqualize; break;
    case RandAugOp::Invert: a.kind = kAugSolarize, a.ival = 0; break;
    case RandAugOp::Rotate: affine(pil_rotate_matrix(W, H, s * frac * 30.0)); break;
    case RandAugOp::PosterizeIncreasing: a.kind = kAugPosterize, a.ival = 4 - static_cast<int>(frac * 4); break;
    case RandAugOp::SolarizeIncreasing: a.kind = kAugSolarize, a.ival = 256 - static_cast<int>(frac * 256); break;
    case RandAugOp::SolarizeAdd: a.kind = kAugSolarizeAdd, a.ival = static_cast<int>(frac * 110); break;
    case RandAugOp::ColorIncreasing: a.kind = kAugColor; break;
    case RandAugOp::ContrastIncreasing: a.kind = kAugContrast; break;
    case RandAugOp::BrightnessIncreasing: a.kind = kAugBrightness; break;
    case RandAugOp::SharpnessIncreasing: a.kind = kAugSharpness; break;
    case RandAugOp::ShearX: affine({1, s * frac * 0.3, 0, 0, 1, 0}); break;
    case RandAugOp::ShearY: affine({1, 0, 0, s * frac * 0.3, 1, 0}); break;
    case RandAugOp::TranslateXRel: affine({1, 0, s * frac * 0.45 * W, 0, 1, 0}); break;
    case RandAugOp::TranslateYRel: affine({1, 0, 0, 0, 1, s * frac * 0.45 * H}); break;
  }
  return a;
}

cv::Mat randaug_apply(const cv::Mat& img, RandAugOp op, double level, int sign, const RandAugmentParams& p) {
  const AugmentStepArgs a = randaug_step_args(op, level, sign, img.cols, img.rows, p);
  switch (a.kind) {
    case kAugAutoContrast: return pil_autocontrast(img);
    case kAugEqualize: return pil_equalize(img);
    case kAugPosterize: return a.ival >= 8 ? img : pil_point(img, posterize_lut(a.ival));
    case kAugSolarize: return pil_point(img, solarize_lut(a.ival));
    case kAugSolarizeAdd: return pil_point(img, solarize_add_lut(a.ival));
    case kAugColor: return pil_color(img, a.factor);
    case kAugContrast: return pil_contrast(img, a.factor);
    case kAugBrightness: return pil_brightness(img, a.factor);
    case kAugSharpness: return pil_sharpness(img, a.factor);
    case kAugAffine:
      return affine_pil(img, {a.m[0], a.m[1], a.m[2], a.m[3], a.m[4], a.m[5]}, AffineFilter::Bicubic, p.fill);
    default: return img;
  }
}

int randaug_plan(Philox& rng, const RandAugmentParams& p, RandAugStep* steps) {
  // Draw the op list first (timm draws all ops, then applies them in order).
  std::array<int, kMaxRandAugSteps> ops{};
  const int n = std::min(p.num_ops, kMaxRandAugSteps);
  for (int i = 0; i < n; ++i) ops[i] = static_cast<int>(rng.integer(0, kNumRandAugOps - 1));
  int applied = 0;
  for (int i = 0; i < n; ++i) {
    if (rng.uniform_double() >= p.prob) continue;  // timm: skip when random() > prob
    double m = p.magnitude;
    if (p.magnitude_std > 0) m = rng.normal(m, p.magnitude_std);
    m = std::min(p.max_level, std::max(0.0, m));
    const int sign = rng.uniform_double() < 0.5 ? -1 : 1;
    steps[applied++] = RandAugStep{static_cast<RandAugOp>(ops[i]), sign, m};
  }
  return applied;
}

cv::Mat rand_augment(const cv::Mat& img, Philox& rng, const RandAugmentParams& p) {
  RandAugStep steps[kMaxRandAugSteps];
  const int n = randaug_plan(rng, p, steps);
  cv::Mat cur = img;
  for (int i = 0; i < n; ++i) cur = randaug_apply(cur, steps[i].op, steps[i].level, steps[i].sign, p);
  return cur;
}

}  // namespace vt
