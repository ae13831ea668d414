// Applies a Mixup/CutMix decision drawn on the host (data_pipeline/mixup.h,
// timm 0.3.2 batch mode, docs/recipes.md §4) to a batch where it lives, so
// the GPU trainer mixes the uploaded batch on the device. Sample i mixes with
// sample B-1-i (B even):
//   Mixup:  x_i <- l x_i + m x_{B-1-i},  l = fp32(lambda), m = fp32(1 - lambda)
//   CutMix: the box [y0, y1) x [x0, x1) of every channel is exchanged
//           between samples i and B-1-i (lambda is then the box-corrected one)
//   targets t_i = lambda onehot_s(y_i) + (1 - lambda) onehot_s(y_{B-1-i}),
//           onehot_s = label smoothing s: off = s/K, on = 1 - s + off.
// The same arithmetic and rounding points as data_pipeline's mixup_batch
// (no fused multiply-adds), so a batch mixed on the GPU equals the loader's.
// images [B, C, H, W] contiguous, F32 (or BF16 on CUDA), mixed in place;
// labels I32 [B]; targets F32 [B, K]. CPU: kernels/cpu/mixup.h; CUDA:
// kernels/cuda/mixup.h. Labels outside [0, K) are the caller's to check
// (the loader validates them before upload). Errors: std::invalid_argument
// naming the op and the tensor or value.
#pragma once
#include "core/tensor.h"

namespace vt {

struct MixBox {
  int y0 = 0, y1 = 0, x0 = 0, x1 = 0;  // half-open, as data_pipeline's CutmixBox
};

void mix_images(const Tensor& images, bool cutmix, double lambda, const MixBox& box);
void mix_targets(const Tensor& labels, double lambda, double smoothing, const Tensor& targets);

}  // namespace vt
