// The pooling window both twins of kernels/pool.h take (kernels/cpu/pool.h,
// kernels/cuda/pool.h): one plain struct, filled once by pool2d_forward.
#pragma once
#include <cstdint>

namespace vt {

struct Pool2dDesc {
  int64_t n, c, h, w, oh, ow;  // input N C H W and output OH OW
  int kind;                    // 0 max, 1 average counting padding, 2 average over in-bounds taps
  int kh, kw, sh, sw, ph, pw;  // window, stride, top/left padding
  int64_t x_strides[4], y_strides[4];  // elements, N C H W
};

}  // namespace vt
