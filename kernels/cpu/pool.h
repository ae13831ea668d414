// CPU pooling behind kernels/pool.h (oneDNN for windowed pooling).
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

struct Pool2dDesc {
  int64_t n, c, h, w, oh, ow;
  int kind;  // 0 max, 1 avg including padding, 2 avg excluding padding
  int kh, kw, sh, sw, ph, pw;
  int64_t x_strides[4], y_strides[4];
};

void pool2d_forward(const Pool2dDesc& d, const float* x, float* y);
// x: rows of hw contiguous floats (rows = N*C, row stride hw); y[r] = mean.
void global_avg_pool2d(const float* x, float* y, int64_t rows, int64_t hw);

}  // namespace cpu
}  // namespace vt
