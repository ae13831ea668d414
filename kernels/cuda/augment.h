// CUDA twins of the batched augmentation kernels behind kernels/augment.h,
// same contract as kernels/cpu/augment.h; args point to device memory.
//  - augment_step: a statistics pass (one 256-thread block per sample and
//    band: a histogram from shared-memory tiles, one thread per bin, then
//    the lut; one per sample for Contrast's gray sum, a fixed tree), then
//    one thread per output pixel running augment_math::step_pixel. Integer
//    counts and fixed reduction orders: no atomics, the same bits every run.
//  - augment_erase: one thread per element of the batch, inside a box it
//    draws its own normal (philox_normal_at).
// Float and double arithmetic rounds every operation (__fmul_rn & co. in
// kernels/augment_math.h), as the host.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/augment_args.h"

namespace vt {
namespace cuda {

// host_args: N entries in host memory, copied at the call into page-locked
// staging and from there (cudaMemcpyAsync, no host wait, ordered on
// `stream`) into dev_args (device memory for
// N entries) before the kernels; luts: device scratch of N * 3 * 256 bytes;
// sums: N uint64.
void augment_step(const uint8_t* in, const AugmentStepArgs* host_args, AugmentStepArgs* dev_args, uint8_t* out,
                  int64_t N, int H, int W, uint8_t* luts, uint64_t* sums, cudaStream_t stream = 0);
void augment_erase(float* out, const AugmentEraseArgs* host_args, AugmentEraseArgs* dev_args, int64_t N, int H, int W,
                   cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
