// The convolution both twins of kernels/conv.h take (kernels/cpu/conv.h,
// kernels/cuda/conv.h): one plain struct, filled once by conv2d_forward.
// Shapes and strides are in elements.
#pragma once
#include <cstdint>

namespace vt {

struct Conv2dDesc {
  int64_t n, c, h, w;  // input
  int64_t o, kh, kw;   // output channels, kernel
  int64_t oh, ow;      // output spatial size
  int sh, sw;          // stride
  int ph, pw;          // top / left padding (bottom / right follow from oh, ow)
  int dh, dw;          // dilation (1 = dense)
  int groups;
  bool relu;
  int64_t x_strides[4];  // N, C, H, W
  int64_t y_strides[4];
};

}  // namespace vt
