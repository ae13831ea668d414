// CPU uint8 -> normalised fp32 conversion; see kernels/image_prep.h.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

// in [B, H, W, C] -> out [B, C, H, W]; a, b: C per-channel constants.
void normalize_u8_hwc(const uint8_t* in, const float* a, const float* b, float* out, int64_t B, int64_t H, int64_t W,
                      int64_t C);

}  // namespace cpu
}  // namespace vt
