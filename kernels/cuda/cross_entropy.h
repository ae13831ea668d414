// CUDA softmax cross-entropy behind kernels/cross_entropy.h, the same
// formulas as kernels/cpu/cross_entropy.h (hard labels with smoothing, or
// soft targets), forward and backward fused, loss reduced on the device.
//  - logits [B, K] fp32; exactly one of labels (I32 [B]) and targets
//    (fp32 [B, K]) is non-null; dlogits [B, K] fp32 or nullptr (may alias
//    logits); pred I32 [B] or nullptr (argmax, first maximum).
//  - One 256-thread block per row: row max/argmax, log-sum-exp and the row
//    loss in double (fixed tree order), then dlogits in fp32 from the fp32
//    lse, as the CPU. Row losses are summed by one block in a fixed order:
//    deterministic, and equal to the CPU's up to summation order.
//  - stats: device double[2] receives (mean loss, number correct); stats_f32,
//    if non-null, the same two values in fp32. Nothing is synchronised: the
//    host reads the stats when it logs.
//  - A label outside [0, K) cannot be reported without a host round trip:
//    its row's loss is NaN (so the mean is NaN) and its dlogits row is NaN.
//    The Tensor API validates labels on the host before calling this.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace vt {
namespace cuda {

void cross_entropy(const float* logits, const int32_t* labels, const float* targets, int64_t B, int64_t K,
                   float smoothing, float grad_scale, float* dlogits, int32_t* pred, double* stats,
                   float* stats_f32, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
