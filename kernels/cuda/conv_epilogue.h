// The convolution epilogue as its own pass, for the cuDNN convolution
// (kernels/cuda/conv_cudnn.h) where the fused bias + activation call is not
// used (a bf16 output, no IDENTITY-capable algorithm) or refused:
//   y[n, o, i, j] = relu?(y[n, o, i, j] + b[o])   in place, fp32 arithmetic,
// y in `io` (F32 or BF16; a bf16 y is read, biased and rounded once more).
// y is [N, O, OH, OW] with any strides (y_strides in elements, as
// Conv2dDesc); b [O] fp32 or null. Errors: std::runtime_error naming the
// CUDA error, std::invalid_argument for another dtype.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

void conv_bias_relu(void* y, DType io, const int64_t y_strides[4], int64_t n, int64_t o, int64_t oh, int64_t ow,
                    const float* b, bool relu, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
