// CPU twins of the batched augmentation kernels; see kernels/augment.h.
#pragma once
#include <cstdint>

#include "kernels/augment_args.h"

namespace vt {
namespace cpu {

// in, out [N, H, W, 3] uint8 (distinct); args N entries.
void augment_step(const uint8_t* in, const AugmentStepArgs* args, uint8_t* out, int64_t N, int H, int W);
// out [N, 3, H, W] float; args N entries.
void augment_erase(float* out, const AugmentEraseArgs* args, int64_t N, int H, int W);

}  // namespace cpu
}  // namespace vt
