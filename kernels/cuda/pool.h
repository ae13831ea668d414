// CUDA pooling behind kernels/pool.h (fp32). Windowed pooling: one thread per
// output element, taps in row-major order, the average summed in fp32 and
// divided once (the CPU twin is oneDNN's; they agree to fp32 rounding, max
// pooling exactly). Global average: one thread per (n, c) plane, summed in
// double in index order and rounded once, the same bits as the CPU twin.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/pool_desc.h"

namespace vt {
namespace cuda {

void pool2d_forward(const Pool2dDesc& d, const float* x, float* y, cudaStream_t stream = 0);
// x: rows of hw contiguous floats; y[r] = mean of row r.
void global_avg_pool2d(const float* x, float* y, int64_t rows, int64_t hw, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
