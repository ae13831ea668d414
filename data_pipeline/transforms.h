// Per-image transforms of the DeiT and DiT recipes on 8-bit RGB cv::Mat
// (CV_8UC3), plus the float CHW stage. Semantics: docs/recipes.md §2, §5, §8
// (torchvision 0.8 RandomResizedCrop / Resize / CenterCrop, timm 0.3.2
// RandomErasing, ADM's center_crop_arr). All randomness is drawn from the
// vt::Philox passed in, which the caller keys by (seed, epoch, sample).
#pragma once
#include <array>
#include <cstdint>
#include <optional>

#include <opencv2/core.hpp>

#include "core/philox.h"

namespace vt {

struct CropBox {
  int top = 0, left = 0, height = 0, width = 0;
  bool operator==(const CropBox& o) const {
    return top == o.top && left == o.left && height == o.height && width == o.width;
  }
};

struct RrcParams {
  double scale_lo = 0.08, scale_hi = 1.0;
  double ratio_lo = 3.0 / 4.0, ratio_hi = 4.0 / 3.0;
};

// One RandomResizedCrop try for a W x H source with the two uniform draws
// u_area, u_ratio in [0, 1): target = area * lerp(scale, u_area),
// aspect = exp(lerp(ln ratio, u_ratio)), w = round(sqrt(target*aspect)),
// h = round(sqrt(target/aspect)) (half to even, as Python's round).
// Returns (w, h) when 0 < w <= W and 0 < h <= H, else nothing.
std::optional<std::array<int, 2>> rrc_try(int W, int H, double u_area, double u_ratio, const RrcParams& p = {});

// The fallback central crop after 10 failed tries.
CropBox rrc_fallback(int W, int H, const RrcParams& p = {});

// The whole box: up to 10 tries, top/left uniform inclusive, else fallback.
CropBox rrc_box(int W, int H, Philox& rng, const RrcParams& p = {});

// Horizontal flip in place.
void hflip_inplace(cv::Mat& img);

// Python's round(): half to even.
double round_half_even(double x);

// uint8 HWC RGB -> float CHW, (v/255 - mean[c]) / std[c]. `out` holds 3*H*W.
void to_chw_normalized(const cv::Mat& img, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                       float* out);

struct ErasingParams {
  double probability = 0.25;
  double min_area = 0.02, max_area = 1.0 / 3.0;
  double min_aspect = 0.3;  // aspect range (min_aspect, 1/min_aspect)
};

// timm RandomErasing(mode='pixel', count 1) on a CHW float image. Returns
// the erased box (height 0 when skipped) for inspection:
// random_erasing_box, then random_erasing_fill from the same rng.
CropBox random_erasing(float* chw, int C, int H, int W, Philox& rng, const ErasingParams& p = {});

// RandomErasing's box draws for an H x W image (height 0: not erased); the
// pixel values are the rng's next draws (random_erasing_fill).
CropBox random_erasing_box(int H, int W, Philox& rng, const ErasingParams& p = {});

// Fills `box` of every channel with rng.normal() in C, y, x order (timm's
// torch.empty(...).normal_() over the [C, h, w] patch), as float.
void random_erasing_fill(float* chw, int C, int H, int W, const CropBox& box, Philox& rng);

// DeiT eval geometry for a W x H source: resize shorter side to `resize`
// (longer side int(resize*long/short)), then the center crop offsets
// int(round((h - crop)/2)). Returns the resized size and the crop box.
struct EvalGeometry {
  int resized_w = 0, resized_h = 0;
  CropBox crop;
};
EvalGeometry eval_geometry(int W, int H, int resize = 256, int crop = 224);

// ADM center crop to S x S (docs/recipes.md §8): box-halve while min side >= 2S,
// bicubic to shorter side S with sizes rounded, crop ((H-S)//2, (W-S)//2).
cv::Mat adm_center_crop(const cv::Mat& img, int S);

}  // namespace vt
