// CUDA twins of kernels/cpu/modulate.h (DiT's adaLN modulate and gates),
// behind kernels/modulate.h. x, out, dout, dx [B, T, D] contiguous in `io`
// (F32 or BF16); the [B, D] vectors (shift, scale, gate and their
// gradients) fp32 with unit stride along D and row stride ld_*; residual
// fp32 (the residual streams stay fp32 under bf16 training). The token sums
// of the vector gradients run t = 0, 1, ... per (b, d) in fp32, as the CPU.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

void modulate_forward(const void* x, const float* shift, int64_t ld_shift, const float* scale, int64_t ld_scale,
                      void* out, int64_t B, int64_t T, int64_t D, DType io, cudaStream_t stream = 0);
// dx, dshift, dscale may each be nullptr (not needed).
void modulate_backward(const void* dout, const void* x, const float* scale, int64_t ld_scale, void* dx,
                       float* dshift, int64_t ld_dshift, float* dscale, int64_t ld_dscale, int64_t B, int64_t T,
                       int64_t D, DType io, cudaStream_t stream = 0);
void gate_forward(const void* x, const float* gate, int64_t ld_gate, void* out, int64_t B, int64_t T, int64_t D,
                  DType io, cudaStream_t stream = 0);
// dx, dgate may each be nullptr.
void gate_backward(const void* dout, const void* x, const float* gate, int64_t ld_gate, void* dx, float* dgate,
                   int64_t ld_dgate, int64_t B, int64_t T, int64_t D, DType io, cudaStream_t stream = 0);
// residual (fp32) += alpha * gate * x
void gate_residual_add(const void* x, const float* gate, int64_t ld_gate, float alpha, float* residual, int64_t B,
                       int64_t T, int64_t D, DType io, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
