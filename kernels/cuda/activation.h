// CUDA activations behind kernels/activation.h (n contiguous elements in
// `io`, F32 or BF16; out may alias in). fp32 arithmetic with CUDA's accurate
// erff/tanhf/expf (the build does not use --use_fast_math):
//   gelu_erf  y = 0.5 x (1 + erf(x / sqrt 2)),  y' = Phi(x) + x phi(x)
//   gelu_tanh y = 0.5 x (1 + tanh(k (x + 0.044715 x^3))), k = sqrt(2/pi)
//   silu      y = x sigmoid(x),  y' = s (1 + x (1 - s))
// Backward overwrites dx = dy * f'(x). Errors: std::invalid_argument (dtype),
// std::runtime_error (CUDA).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

enum class ActKind { GeluErf, GeluTanh, SiLU };

void activation_forward(ActKind kind, const void* x, void* y, int64_t n, DType io, cudaStream_t stream = 0);
void activation_backward(ActKind kind, const void* dy, const void* x, void* dx, int64_t n, DType io,
                         cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
