// CPU attention kernels on raw fp32 pointers; see kernels/attention.h for the
// layouts. OpenMP over (batch, head); oneDNN sgemm for the four GEMMs.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

// probs may be null (inference): a per-thread scratch holds the [T, T] block.
void attention_forward(const float* qkv, float* out, float* probs, int64_t B, int64_t T, int64_t H,
                       int64_t Dh);
void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv, int64_t B,
                        int64_t T, int64_t H, int64_t Dh);

}  // namespace cpu
}  // namespace vt
