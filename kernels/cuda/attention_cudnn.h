// cuDNN's fused scaled-dot-product attention (flash attention inside cuDNN,
// cudnnGraph "SDPA" forward and backward) through the cuDNN frontend's C++
// graph API (github.com/NVIDIA/cudnn-frontend, samples/cpp/sdpa). BF16 I/O,
// fp32 softmax and accumulation, no [T, T] tensor in memory.
//
// Layouts are kernels/attention.h's, given to cuDNN as strided views:
//   qkv  [B, T, 3, H, Dh] bf16 -> Q, K, V as [B, H, T, Dh], strides
//        (3*T*D, Dh, 3*D, 1), D = H*Dh (offsets 0, D, 2*D)
//   out  [B, T, H, Dh] bf16 -> O [B, H, T, Dh], strides (T*D, Dh, D, 1)
//   lse  [B, H, T] fp32: cuDNN's softmax "Stats", the natural-log logsumexp
//        of the scaled scores (set_stats_use_log2(false)), the same quantity
//        the own flash kernel saves, so either backward can consume it.
//   dqkv like qkv; the backward OVERWRITES it.
// scale = 1 / sqrt(Dh). No mask, no dropout.
//
// Graphs are built once per (device, B, T, H, Dh, forward/backward) and
// cached for the process (building costs milliseconds; a training step
// reuses the same few shapes); the cuDNN handle is per thread and device and
// bound to the caller's stream at each call. Workspace comes from vt's
// caching allocator on that stream.
//
// Built only when CMake finds the frontend headers and cuDNN (it then
// defines VT_CUDNN_SDPA; scripts/setup.sh fetches the headers). Never in the
// CUDA emulator (tests/cuda/emu): there the own flash kernel
// (kernels/cuda/attention.h) serves every call. Errors: std::runtime_error
// naming the op, the shape and cuDNN's message.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace vt {
namespace cuda {

// Whether cuDNN takes this shape (checked once per shape by building the
// forward graph; false e.g. for head dims cuDNN's SDPA lacks or a GPU older
// than sm_80). Callers fall back to the flash kernel when false.
bool cudnn_sdpa_supported(int64_t B, int64_t T, int64_t H, int64_t Dh);

void cudnn_sdpa_forward(const void* qkv, void* out, float* lse, int64_t B, int64_t T, int64_t H, int64_t Dh,
                        cudaStream_t stream = 0);
void cudnn_sdpa_backward(const void* qkv, const void* out, const float* lse, const void* dout, void* dqkv,
                         int64_t B, int64_t T, int64_t H, int64_t Dh, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
