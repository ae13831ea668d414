// CUDA 2-D convolution behind kernels/conv.h (forward, fp32): an implicit
// GEMM per group, y[o, p] = sum_k w[o, k] * x_col[k, p] with k = (c, a, b)
// over the input channels of the group and the kernel taps and p = (n, i, j)
// over the output pixels; x_col is never materialised, each tile of it is
// gathered from x into shared memory (zero outside the padded input).
// Accumulates in fp32 (no TF32), adds the bias and applies ReLU in the
// epilogue. Shapes and strides are in elements; x and y may be strided views
// with W stride 1 (y a channel slice of a concat buffer); w is
// [O, C/G, KH, KW] contiguous, b [O] or null.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/conv_desc.h"

namespace vt {
namespace cuda {

void conv2d_forward(const Conv2dDesc& d, const float* x, const float* w, const float* b, float* y,
                    cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
