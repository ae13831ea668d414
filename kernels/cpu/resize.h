// CPU bilinear resize behind kernels/resize.h (planes of contiguous floats).
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void resize_bilinear(const float* x, float* y, int64_t planes, int64_t h, int64_t w, int64_t oh, int64_t ow);

}  // namespace cpu
}  // namespace vt
