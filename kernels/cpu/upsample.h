// CPU nearest 2x upsampling behind kernels/upsample.h: `planes` planes of
// [h, w] into [2h, 2w], both contiguous.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void upsample_nearest2x(const float* x, float* y, int64_t planes, int64_t h, int64_t w);

}  // namespace cpu
}  // namespace vt
