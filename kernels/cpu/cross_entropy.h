// CPU softmax cross-entropy behind kernels/cross_entropy.h. Row-major
// contiguous [b, k]; dlogits and pred may be nullptr. Returns the mean loss
// and writes the number of correct rows to *correct.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

double cross_entropy_hard(const float* logits, const int32_t* labels, int64_t b, int64_t k,
                          float smoothing, float grad_scale, float* dlogits, int32_t* pred,
                          int64_t* correct);

double cross_entropy_soft(const float* logits, const float* targets, int64_t b, int64_t k,
                          float grad_scale, float* dlogits, int32_t* pred, int64_t* correct);

}  // namespace cpu
}  // namespace vt
