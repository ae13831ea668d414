// CPU pooling behind kernels/pool.h (oneDNN for windowed pooling).
#pragma once
#include <cstdint>

#include "kernels/pool_desc.h"

namespace vt {
namespace cpu {

void pool2d_forward(const Pool2dDesc& d, const float* x, float* y);
// x: rows of hw contiguous floats (rows = N*C, row stride hw); y[r] = mean.
void global_avg_pool2d(const float* x, float* y, int64_t rows, int64_t hw);

}  // namespace cpu
}  // namespace vt
