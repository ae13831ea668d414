// DeiT's per-sample train augmentation after RandomResizedCrop, split in two
// (docs/recipes.md §2-3): a plan, every random draw of flip, RandAugment
// (timm 0.3.2 auto_augment.py, rand-m9-mstd0.5-inc1) and RandomErasing
// (timm random_erasing.py, mode 'pixel') made in the host pipeline's order
// from the sample's vt::Philox, and an apply that runs a plan on a uint8
// crop and writes the normalised float image. None of the draws depends on
// pixels, so plan + apply is bit for bit the interleaved pipeline
// (process_image's DeitTrain path is plan + apply_augment_plan), and a
// batch is a pure function of (seed, epoch, draw id) wherever it is applied.
//
// RandomErasing's pixel values are normals drawn after the box; a plan
// records the Philox position where they start (PhiloxPosition) instead of
// the values, so it stays a small fixed-size POD and an apply elsewhere
// regenerates them (Philox::at, C, y, x order).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "data_pipeline/randaugment.h"
#include "data_pipeline/transforms.h"
#include "kernels/augment.h"

namespace vt {

// What the augmentation does: the DeitTrain part of ImagePipelineConfig
// (dataset.h, augment_settings()).
struct AugmentSettings {
  bool hflip = true, rand_augment = true, random_erasing = true;
  RandAugmentParams randaug;
  ErasingParams erasing;
  std::array<float, 3> mean{0.485f, 0.456f, 0.406f}, std{0.229f, 0.224f, 0.225f};
};

// One sample's draws. Plain data (copied into batches as is).
struct AugmentPlan {
  int32_t flip = 0;       // 1: horizontal flip first
  int32_t num_steps = 0;  // applied RandAugment steps, in order
  RandAugStep steps[kMaxRandAugSteps];
  CropBox erase;                // height 0: no erasing
  PhiloxPosition erase_normals;  // where the erased values' normals start
};

// The draws for an H x W crop, in the host pipeline's order: flip
// (uniform < 0.5, when hflip), randaug_plan (when rand_augment),
// random_erasing_box (when random_erasing), then the position of the
// normals. Leaves rng after the box draws.
AugmentPlan plan_augment(int H, int W, Philox& rng, const AugmentSettings& s);

// Applies `plan` to one crop: hwc uint8 [H, W, 3] RGB (read only, rows
// contiguous) -> out float [3, H, W]: flip, the RandAugment steps (the
// Pillow-exact ops of randaugment.h), (v/255 - mean)/std as
// to_chw_normalized, the erased box filled with the recorded normals.
void apply_augment_plan(const uint8_t* hwc, int H, int W, const AugmentPlan& plan, const AugmentSettings& s,
                        float* out);

// The kernels' form of a batch's plans (kernels/augment.h augment_apply):
// step 0 the flips, then step s + 1 the s-th RandAugment op of each sample
// (randaug_step_args for an H x W crop), the normalisation constants and
// the erasing boxes with their normals' positions. augment_apply(crops,
// augment_batch_args(plans)) is apply_augment_plan of every sample, bit
// for bit, on the CPU twins and on the emulated CUDA twins.
AugmentBatchArgs augment_batch_args(const std::vector<AugmentPlan>& plans, const AugmentSettings& s, int H, int W);

// A consumer's batch: uint8 crops U8 [B, H, W, 3] (on any device) through
// their plans into `out`, F32 [B, 3, H, W] on the crops' device, reused
// from call to call (made again only for another shape or device), with
// `scratch` kept by the caller: after the first batch nothing is allocated.
inline void augment_crops(const Tensor& crops, const std::vector<AugmentPlan>& plans, const AugmentSettings& s,
                          Tensor& out, AugmentScratch* scratch) {
  const Shape& u = crops.shape();
  const Shape want{u[0], u[3], u[1], u[2]};
  if (!out.defined() || out.shape() != want || out.device() != crops.device())
    out = Tensor::empty(want, DType::F32, crops.device());
  augment_apply(crops, augment_batch_args(plans, s, static_cast<int>(u[1]), static_cast<int>(u[2])), out, scratch);
}

}  // namespace vt
