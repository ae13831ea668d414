// Plain-data arguments of the batched augmentation kernels (kernels/augment.h):
// one entry per sample, built on the host from a sample's plan
// (data_pipeline/augment_plan.h, augment_batch_args) and copied to the
// device as bytes. Header only; no Tensor, no OpenCV.
#pragma once
#include <cstdint>

namespace vt {

// What one step does to one sample (references: timm 0.3.2 auto_augment.py
// for the ops, Pillow for their arithmetic, kernels/augment_math.h).
enum AugmentKind : int32_t {
  kAugCopy = 0,       // unchanged
  kAugFlip,           // horizontal flip (torchvision RandomHorizontalFlip)
  kAugAutoContrast,   // ImageOps.autocontrast: per-band lut from the image's histogram
  kAugEqualize,       // ImageOps.equalize: per-band lut from the image's histogram
  kAugPosterize,      // ival = bits kept (1..8; 0 keeps none)
  kAugSolarize,       // ival = threshold (0: invert)
  kAugSolarizeAdd,    // ival = add (threshold 128)
  kAugColor,          // blend with the gray image (ImageEnhance.Color), factor
  kAugContrast,       // blend with the gray image's rounded mean (ImageEnhance.Contrast), factor
  kAugBrightness,     // blend with black (ImageEnhance.Brightness), factor
  kAugSharpness,      // blend with ImageFilter.SMOOTH (ImageEnhance.Sharpness), factor
  kAugAffine,         // Image.transform AFFINE, BICUBIC, fill: output (x, y) samples m * (x + .5, y + .5, 1)
  kAugNumKinds
};

struct AugmentStepArgs {
  int32_t kind = kAugCopy;
  int32_t ival = 0;
  float factor = 1.0f;
  uint8_t fill[4] = {0, 0, 0, 0};  // kAugAffine: RGB outside the source
  double m[6] = {1, 0, 0, 0, 1, 0};  // kAugAffine: inverse map, Pillow's (a, b, c, d, e, f)
};

// RandomErasing of one sample: the box (height 0: none) and the Philox
// position (core/philox.h PhiloxPosition) of its first normal.
struct AugmentEraseArgs {
  int32_t top = 0, left = 0, height = 0, width = 0;
  uint64_t seed = 0, stream = 0, block = 0;
  uint32_t lane = 0, pad = 0;
};

}  // namespace vt
