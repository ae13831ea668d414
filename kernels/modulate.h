// adaLN conditioning ops of DiT (models.py modulate, gate_msa/gate_mlp):
//   modulate: out[b,t,:] = x[b,t,:] * (1 + scale[b,:]) + shift[b,:]
//   gate:     out[b,t,:] = gate[b,:] * x[b,t,:]
// x, out, dout, dx [B, T, D] contiguous (out may be x), F32, or BF16 on CUDA
// (one dtype per call; the residual of gate_residual_add is F32 always: the
// residual streams stay fp32). CPU: kernels/cpu/modulate.h; CUDA:
// kernels/cuda/modulate.h (token sums in the same order). shift, scale,
// gate and their gradients are [B, D] F32 with unit stride along D but ANY
// row stride, so they can be column slices of the adaLN output [B, 6D]
// (e.g. c.slice(1, 0, D)) and its gradient buffer.
//
// Backward: dx is OVERWRITTEN; dshift, dscale, dgate are OVERWRITTEN too
// (sums over tokens): they are activation gradients of the adaLN Linear's
// output, not parameters. For T=1 rows this is still a plain write.
#pragma once
#include "core/tensor.h"

namespace vt {

void modulate_forward(const Tensor& x, const Tensor& shift, const Tensor& scale, const Tensor& out);
// dx = dout * (1 + scale); dshift = sum_t dout; dscale = sum_t dout * x.
// Pass an undefined Tensor() for a gradient that is not needed.
void modulate_backward(const Tensor& dout, const Tensor& x, const Tensor& scale, const Tensor& dx,
                       const Tensor& dshift, const Tensor& dscale);

void gate_forward(const Tensor& x, const Tensor& gate, const Tensor& out);
// dx = dout * gate; dgate = sum_t dout * x. Undefined Tensor() skips one.
void gate_backward(const Tensor& dout, const Tensor& x, const Tensor& gate, const Tensor& dx,
                   const Tensor& dgate);

// Fused residual form: residual[b,t,:] += alpha * gate[b,:] * x[b,t,:]
// (alpha folds e.g. SiameseNorm's 1/c_l). Backward of the gated part is
// gate_backward with dout scaled by alpha.
void gate_residual_add(const Tensor& x, const Tensor& gate, float alpha, const Tensor& residual);

}  // namespace vt
