// CPU GroupNorm behind kernels/groupnorm.h. x, y [n, c, spatial] contiguous
// (y may alias x); weight/bias [c] or nullptr.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void groupnorm_forward(const float* x, const float* weight, const float* bias, float* y, int64_t n, int64_t c,
                       int64_t spatial, int64_t groups, float eps, bool silu);

}  // namespace cpu
}  // namespace vt
