// CPU convolution behind kernels/conv.h (oneDNN). Shapes and strides are in
// elements; x and y may be strided views (W stride 1).
#pragma once
#include <cstdint>

#include "kernels/conv_desc.h"

namespace vt {
namespace cpu {

// w is [O, C/G, KH, KW] contiguous; b is [O] or nullptr.
void conv2d_forward(const Conv2dDesc& d, const float* x, const float* w, const float* b, float* y);

}  // namespace cpu
}  // namespace vt
