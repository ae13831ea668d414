// CPU LayerNorm kernels behind kernels/layernorm.h. Contiguous row-major
// [rows, d] fp32; weight/bias/mean/rstd/dweight/dbias may be nullptr when
// absent (see kernels/layernorm.h for the semantics).
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void layernorm_forward(const float* x, const float* weight, const float* bias, float eps, int64_t rows,
                       int64_t d, float* y, float* mean, float* rstd);

// accumulate_dx: dx += instead of dx =.
void layernorm_backward(const float* dy, const float* x, const float* weight, const float* mean,
                        const float* rstd, int64_t rows, int64_t d, float* dx, bool accumulate_dx,
                        float* dweight, float* dbias);

}  // namespace cpu
}  // namespace vt
