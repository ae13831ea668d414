// CPU activation kernels behind kernels/activation.h (n contiguous floats;
// out may alias in).
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void gelu_erf_forward(const float* x, float* y, int64_t n);
void gelu_erf_backward(const float* dy, const float* x, float* dx, int64_t n);
void gelu_tanh_forward(const float* x, float* y, int64_t n);
void gelu_tanh_backward(const float* dy, const float* x, float* dx, int64_t n);
void silu_forward(const float* x, float* y, int64_t n);
void silu_backward(const float* dy, const float* x, float* dx, int64_t n);

}  // namespace cpu
}  // namespace vt
