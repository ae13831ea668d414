// CPU convolution behind kernels/conv.h (oneDNN). Shapes and strides are in
// elements; x and y may be strided views (W stride 1).
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

struct Conv2dDesc {
  int64_t n, c, h, w;        // input
  int64_t o, kh, kw;         // output channels, kernel
  int64_t oh, ow;            // output spatial size
  int sh, sw, ph, pw, dh, dw, groups;
  bool relu;
  int64_t x_strides[4];      // N, C, H, W
  int64_t y_strides[4];
};

// w is [O, C/G, KH, KW] contiguous; b is [O] or nullptr.
void conv2d_forward(const Conv2dDesc& d, const float* x, const float* w, const float* b, float* y);

}  // namespace cpu
}  // namespace vt
