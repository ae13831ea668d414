// CUDA multi-head attention behind kernels/attention.h (timm's packed qkv
// layout; see that header). Two paths:
//  - attention_forward/backward with saved probabilities (attention.cu): per
//    batch element, strided-batched cuBLAS GEMMs over the heads and a
//    warp-per-row softmax; [H, T, T] fp32 scores. Kept for callers that want
//    the probabilities and as the reference the benchmark compares against.
//  - flash_attention_* (below): saves the logsumexp instead; what training
//    and inference use.
//   qkv [B, T, 3D], out/dout [B, T, D], dqkv [B, T, 3D] in `io` (F32/BF16);
//   probs [B, H, T, T] in `io` as well (bf16 training saves bf16
//   probabilities, half the bytes), or nullptr in the forward (inference:
//   per-call scratch). Scores and dP are kept in fp32 scratch, so the
//   softmax and its backward run on fp32 values; the max is subtracted
//   before exp. scale = 1 / sqrt(Dh) as on the CPU.
// Backward OVERWRITES dqkv. Scratch comes from vt's caching allocator
// (kernels/cuda/common.cuh explains why that is stream-safe).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

void attention_forward(const void* qkv, void* out, void* probs, int64_t B, int64_t T, int64_t H, int64_t Dh,
                       DType io, cudaStream_t stream = 0);
void attention_backward(const void* qkv, const void* probs, const void* dout, void* dqkv, int64_t B, int64_t T,
                        int64_t H, int64_t Dh, DType io, cudaStream_t stream = 0);

// Flash attention (attention_flash.cu; FlashAttention-2, arXiv:2307.08691):
// one launch over batch x heads x row tiles for the forward, three for the
// backward (D = rowsum(dO * O), dQ, dK/dV), no [T, T] tensor in memory.
// F32 or BF16 I/O (layouts as above), fp32 arithmetic throughout.
//   lse [B, H, T] fp32: logsumexp of the row's scaled scores, written by the
//       forward when non-null (training) and read by the backward, which
//       recomputes P = exp(s - lse) from q and k.
//   out is the forward's output (the backward needs it for D).
// Head dims 1..128 (zero-padded to 32, 64 or 128 inside the kernel);
// std::invalid_argument naming the op otherwise, or when B*H > 65535.
// The backward OVERWRITES dqkv. Runs on the emulator (tests/cuda/emu).
bool flash_attention_supported(int64_t Dh);
void flash_attention_forward(const void* qkv, void* out, float* lse, int64_t B, int64_t T, int64_t H, int64_t Dh,
                             DType io, cudaStream_t stream = 0);
void flash_attention_backward(const void* qkv, const void* out, const float* lse, const void* dout, void* dqkv,
                              int64_t B, int64_t T, int64_t H, int64_t Dh, DType io, cudaStream_t stream = 0);

// The logsumexp path training uses (kernels/attention.h's lse form): cuDNN's
// fused SDPA (attention_cudnn.h) for BF16 when the build defines
// VT_CUDNN_SDPA and cuDNN takes the shape, else the flash kernel above.
// Both save the same lse (natural-log logsumexp of the scaled scores).
// Whether the lse path runs cuDNN's SDPA for this shape and io dtype (a
// VT_CUDNN_SDPA build, BF16, a shape cuDNN takes); else the flash kernel.
bool sdpa_uses_cudnn(int64_t B, int64_t T, int64_t H, int64_t Dh, DType io);
void sdpa_forward(const void* qkv, void* out, float* lse, int64_t B, int64_t T, int64_t H, int64_t Dh, DType io,
                  cudaStream_t stream = 0);
void sdpa_backward(const void* qkv, const void* out, const float* lse, const void* dout, void* dqkv, int64_t B,
                   int64_t T, int64_t H, int64_t Dh, DType io, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
