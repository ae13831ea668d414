// Multi-head scaled dot-product attention (no mask, no dropout) from timm's
// packed qkv layout, forward and backward.
//
// Layout (timm's vision_transformer.Attention, DiT's Attention):
//   qkv  [B, T, 3*D]  viewed as [B, T, 3, H, Dh], D = H*Dh:
//        q[b,h,t,:] = qkv[b, t, 0*D + h*Dh : ...], k at 1*D, v at 2*D.
//   out  [B, T, D]    in layout [B, T, H, Dh] (the input of attn.proj).
//   probs[B, H, T, T] softmax(q k^T * Dh^-0.5) along the last axis, with the
//        row maximum subtracted before exp. Saved by the forward for the
//        backward: attention_saved_bytes() bytes per call (F32).
//
// All tensors contiguous and of one dtype: F32, or BF16 on CUDA (probs then
// saved in bf16; fp32 softmax statistics). Forward writes `out` and `probs` (pass an
// undefined Tensor() as probs for inference: a per-thread [T, T] scratch is
// used instead). Backward OVERWRITES dqkv (it is an activation gradient).
// GEMMs per (batch, head) run through oneDNN's sgemm on CPU, OpenMP over
// (batch, head). Errors: std::invalid_argument naming the op and the shapes
// (D not divisible by num_heads, mismatched shapes or dtypes, non-contiguous).
// CUDA: kernels/cuda/attention.h, cuBLAS strided-batched GEMMs
// over the heads and a warp-per-row softmax.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vt {

void attention_forward(const Tensor& qkv, int64_t num_heads, const Tensor& out, const Tensor& probs);

// dout [B, T, D] -> dqkv [B, T, 3*D] (overwritten). qkv and probs are the
// forward's input and saved probabilities.
void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& dout, int64_t num_heads,
                        const Tensor& dqkv);

// Bytes the forward saves for the backward (the probabilities), B*H*T*T*4.
int64_t attention_saved_bytes(int64_t batch, int64_t tokens, int64_t num_heads);

}  // namespace vt
