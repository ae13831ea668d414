// CPU Mixup/CutMix application on raw pointers; see kernels/mixup.h.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

// images [B, n] (n = C*H*W) in place; l, m the fp32 weights.
void mixup_images(float* images, int64_t B, int64_t n, float l, float m);
// Exchanges rows [y0, y1), columns [x0, x1) of every plane between pairs.
void cutmix_images(float* images, int64_t B, int64_t C, int64_t H, int64_t W, int y0, int y1, int x0, int x1);
void mix_targets(const int32_t* labels, int64_t B, int64_t K, double lambda, double smoothing, float* targets);

}  // namespace cpu
}  // namespace vt
