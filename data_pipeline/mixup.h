// Mixup / CutMix in timm's batch mode (timm 0.3.2 data/mixup.py; docs/recipes.md
// §4): one lambda and, for CutMix, one box per batch; sample i mixes with
// sample B-1-i; targets are label-smoothed one-hots mixed with the same
// lambda (the box-corrected one for CutMix).
#pragma once
#include <cstdint>

#include "core/philox.h"

namespace vt {

struct MixupParams {
  double mixup_alpha = 0.8, cutmix_alpha = 1.0;
  double prob = 1.0, switch_prob = 0.5;
  double label_smoothing = 0.1;
  int num_classes = 1000;
};

// Half-open box [y0, y1) x [x0, x1).
struct CutmixBox {
  int y0 = 0, y1 = 0, x0 = 0, x1 = 0;
};

// timm rand_bbox for a given lambda and centre (cy in [0, H-1], cx in
// [0, W-1]): r = sqrt(1 - lam), cut = int(size * r), edges clipped to
// [0, size] around the centre +- cut//2.
CutmixBox cutmix_box(int H, int W, double lam, int cy, int cx);
// 1 - box area / (H W).
double cutmix_lambda(const CutmixBox& b, int H, int W);

struct MixupDecision {
  bool applied = false, cutmix = false;
  double lambda = 1.0;
  CutmixBox box;
};

// The batch's decision alone: the same draws in the same order as
// mixup_batch (which calls it), for applying where the batch lives
// (kernels/mixup.h mixes an uploaded batch on the GPU).
MixupDecision draw_mixup(int H, int W, Philox& rng, const MixupParams& p);

// Mixes a contiguous float batch images[B, C, H, W] in place and writes
// targets[B, K] (K = p.num_classes): off = s/K, on = 1 - s + off,
// t_i = lam onehot(y_i) + (1 - lam) onehot(y_{B-1-i}).
// Throws std::invalid_argument for an odd B or a label outside [0, K).
MixupDecision mixup_batch(float* images, int B, int C, int H, int W, const int32_t* labels, float* targets,
                          Philox& rng, const MixupParams& p);

// Only the target half (used by mixup_batch, exposed for tests).
void mixup_targets(const int32_t* labels, int B, int K, double lam, double smoothing, float* targets);

}  // namespace vt
