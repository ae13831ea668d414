// Multi-head scaled dot-product attention (no mask, no dropout) from timm's
// packed qkv layout, forward and backward.
//
// Layout (timm's vision_transformer.Attention, DiT's Attention):
//   qkv  [B, T, 3*D]  viewed as [B, T, 3, H, Dh], D = H*Dh:
//        q[b,h,t,:] = qkv[b, t, 0*D + h*Dh : ...], k at 1*D, v at 2*D.
//   out  [B, T, D]    in layout [B, T, H, Dh] (the input of attn.proj).
//   saved  what the forward keeps for the backward, one of
//        - probs [B, H, T, T] in the io dtype: softmax(q k^T * Dh^-0.5) along
//          the last axis, row maximum subtracted before exp (CPU, and CUDA's
//          cuBLAS path);
//        - lse [B, H, T] F32 (CUDA only): the logsumexp of each row of
//          scaled scores; the backward recomputes P from q, k and lse
//          (FlashAttention-2, arXiv:2307.08691), so no [T, T] tensor exists.
//        attention_saved_spec() says which one a device uses; Attention in
//        backbone/modules.cpp allocates it from there.
//
// All tensors contiguous; qkv/out/dout/dqkv/probs of one dtype: F32, or BF16
// on CUDA. Forward writes `out` and `saved` (pass an undefined Tensor() for
// inference: the CPU uses a per-thread [T, T] scratch, CUDA the flash kernel
// without saving). Backward OVERWRITES dqkv (an activation gradient).
// CPU: GEMMs per (batch, head) through oneDNN's sgemm, OpenMP over
// (batch, head). CUDA (kernels/cuda/attention.h): probs -> cuBLAS strided-
// batched GEMMs per sample; lse -> cuDNN's fused SDPA for BF16 when the
// build has it (VT_CUDNN_SDPA), else the own flash kernel (one launch over
// batch x heads; head_dim <= 128). Errors: std::invalid_argument naming the
// op and the shapes (D not divisible by num_heads, mismatched shapes or
// dtypes, non-contiguous, lse on the CPU).
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vt {

void attention_forward(const Tensor& qkv, int64_t num_heads, const Tensor& out, const Tensor& saved);

// dout [B, T, D] -> dqkv [B, T, 3*D] (overwritten). qkv, out and saved are
// the forward's input, output and saved state (out is read only for lse).
void attention_backward(const Tensor& qkv, const Tensor& out, const Tensor& saved, const Tensor& dout,
                        int64_t num_heads, const Tensor& dqkv);
// The same with saved probabilities (no out needed).
void attention_backward(const Tensor& qkv, const Tensor& probs, const Tensor& dout, int64_t num_heads,
                        const Tensor& dqkv);

// The saved state training uses on `device` for io dtype `io`: lse [B, H, T]
// F32 on CUDA when the flash path takes head_dim, else probs [B, H, T, T].
struct AttentionSavedSpec {
  Shape shape;
  DType dtype;
  bool lse;
};
AttentionSavedSpec attention_saved_spec(Device device, int64_t batch, int64_t tokens, int64_t num_heads,
                                        int64_t head_dim, DType io = DType::F32);

// Process-wide counts of attention_forward / attention_backward calls that
// passed their checks, by io dtype: what tests read to see which path a
// training step took (bf16 training must hand attention BF16 q/k/v, which
// is what reaches cuDNN's SDPA), and of the training forwards cuDNN's SDPA
// served (0 in a build without it). Relaxed atomics, never reset: compare
// differences around the code under test.
struct AttentionCalls {
  int64_t forward_f32 = 0, forward_bf16 = 0, backward_f32 = 0, backward_bf16 = 0;
  int64_t forward_cudnn = 0;
};
AttentionCalls attention_calls();

// Bytes of saved probabilities (the CPU's saved state), B*H*T*T*4.
int64_t attention_saved_bytes(int64_t batch, int64_t tokens, int64_t num_heads);

}  // namespace vt
