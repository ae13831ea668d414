// CUDA uint8 -> normalised conversion behind kernels/image_prep.h: one
// thread per output element; v * a + b with the multiply and add rounded
// separately (no FMA), as the host, so fp32 results equal the CPU's bits.
// a, b: C fp32 constants passed by value (C <= 4).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

constexpr int kMaxImageChannels = 4;

void normalize_u8_hwc(const uint8_t* in, const float* a, const float* b, void* out, int64_t B, int64_t H, int64_t W,
                      int64_t C, DType io, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
