// CPU adaLN kernels on raw fp32 pointers; see kernels/modulate.h. x-like
// tensors are contiguous [B, T, D]; per-batch vectors are rows of length D at
// row stride `ld` (elements). Null gradient pointers are skipped.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void modulate_forward(const float* x, const float* shift, int64_t ld_shift, const float* scale,
                      int64_t ld_scale, float* out, int64_t B, int64_t T, int64_t D);
void modulate_backward(const float* dout, const float* x, const float* scale, int64_t ld_scale, float* dx,
                       float* dshift, int64_t ld_dshift, float* dscale, int64_t ld_dscale, int64_t B,
                       int64_t T, int64_t D);

void gate_forward(const float* x, const float* gate, int64_t ld_gate, float* out, int64_t B, int64_t T,
                  int64_t D);
void gate_backward(const float* dout, const float* x, const float* gate, int64_t ld_gate, float* dx,
                   float* dgate, int64_t ld_dgate, int64_t B, int64_t T, int64_t D);
void gate_residual_add(const float* x, const float* gate, int64_t ld_gate, float alpha, float* residual,
                       int64_t B, int64_t T, int64_t D);

}  // namespace cpu
}  // namespace vt
