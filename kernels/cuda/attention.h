// CUDA multi-head attention behind kernels/attention.h (timm's packed qkv
// layout; see that header): per batch element, strided-batched cuBLAS GEMMs
// over the heads (kernels/cuda/matmul.h) and a warp-per-row softmax.
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

}  // namespace cuda
}  // namespace vt
