// RandAugment "rand-m9-mstd0.5-inc1" (timm 0.3.2, auto_augment.py) on 8-bit
// RGB cv::Mat, semantics in docs/recipes.md §3: two ops drawn with replacement
// from the 15 "increasing" ops, each skipped with probability 0.5, magnitude
// ~ N(9, 0.5) clipped to [0, 10], signed parameters negated with
// probability 0.5, geometric ops bicubic with fill (124, 116, 104).
// Each op reproduces the Pillow function timm calls (ImageOps, ImageEnhance,
// Image.transform); tests compare them with Pillow outputs.
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include <opencv2/core.hpp>

#include "core/philox.h"
#include "kernels/augment_args.h"

namespace vt {

enum class RandAugOp {
  AutoContrast, Equalize, Invert, Rotate, PosterizeIncreasing, SolarizeIncreasing, SolarizeAdd,
  ColorIncreasing, ContrastIncreasing, BrightnessIncreasing, SharpnessIncreasing,
  ShearX, ShearY, TranslateXRel, TranslateYRel,
};
constexpr int kNumRandAugOps = 15;
const char* randaug_op_name(RandAugOp op);

struct RandAugmentParams {
  int num_ops = 2;
  double magnitude = 9.0, magnitude_std = 0.5, max_level = 10.0;
  double prob = 0.5;
  cv::Vec3b fill{124, 116, 104};
};

// One applied RandAugment op: which, its magnitude level in [0, max_level]
// and the sign of its signed parameter (+1 / -1).
struct RandAugStep {
  RandAugOp op = RandAugOp::AutoContrast;
  int sign = 1;
  double level = 0;
};
constexpr int kMaxRandAugSteps = 16;  // num_ops is capped here (as rand_augment always did)

// The policy's draws for one image, in timm's order (all ops first, then per
// op: apply?, magnitude, sign), without the image: the draws never depend
// on pixels. Writes the applied steps in order; returns their count.
int randaug_plan(Philox& rng, const RandAugmentParams& p, RandAugStep* steps);

// Applies the policy; returns the image (may alias the input):
// randaug_plan, then randaug_apply of each step.
cv::Mat rand_augment(const cv::Mat& img, Philox& rng, const RandAugmentParams& p = {});

// Applies one op at `level` in [0, 10] with a fixed sign (+1 or -1 for the
// signed ops), for tests and for reuse.
cv::Mat randaug_apply(const cv::Mat& img, RandAugOp op, double level, int sign, const RandAugmentParams& p = {});

// The parameters of one op at `level` with `sign` on a W x H image, as the
// batched kernels take them (kernels/augment_args.h): the kind, the integer
// (posterize bits, solarize threshold, solarize_add amount), the enhance
// factor, the affine matrix and fill. randaug_apply applies exactly these.
AugmentStepArgs randaug_step_args(RandAugOp op, double level, int sign, int W, int H, const RandAugmentParams& p = {});

// Image.rotate(degrees, expand=False)'s inverse affine matrix for a W x H image.
std::array<double, 6> pil_rotate_matrix(int W, int H, double degrees);

// Pillow equivalents the ops are built from (exposed for tests).
cv::Mat pil_autocontrast(const cv::Mat& img);
cv::Mat pil_equalize(const cv::Mat& img);
cv::Mat pil_point(const cv::Mat& img, const std::array<uint8_t, 256>& lut);
std::array<uint8_t, 256> posterize_lut(int bits);          // keep `bits` top bits
std::array<uint8_t, 256> solarize_lut(int threshold);      // v >= threshold -> 255 - v
std::array<uint8_t, 256> solarize_add_lut(int add, int threshold = 128);
cv::Mat pil_gray(const cv::Mat& img);  // CV_8UC1, Pillow's L = (19595 R + 38470 G + 7471 B + 0x8000) >> 16
cv::Mat pil_blend(const cv::Mat& degenerate, const cv::Mat& img, float factor);  // Image.blend
cv::Mat pil_color(const cv::Mat& img, float factor);
cv::Mat pil_contrast(const cv::Mat& img, float factor);
cv::Mat pil_brightness(const cv::Mat& img, float factor);
cv::Mat pil_sharpness(const cv::Mat& img, float factor);
cv::Mat pil_rotate(const cv::Mat& img, double degrees, const cv::Vec3b& fill);

}  // namespace vt
