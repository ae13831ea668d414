// CUDA twins of kernels/cpu/embedding.h behind kernels/embedding.h: label
// embedding lookup and its gradient, DiT's sinusoidal timestep embedding.
// All fp32, contiguous; ids I32 in [0, V) (checked by the caller).
//  - embedding_backward: one thread per column d adds the batch in order
//    b = 0, 1, ... (duplicates included), as the CPU: bitwise equal.
//  - timestep_embedding: the CPU's rounding points (freq and t*freq rounded
//    to fp32, cos/sin in double, rounded to fp32); device cos/sin/exp in
//    double differ from the host's by at most an ulp of double.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace vt {
namespace cuda {

void embedding_forward(const float* table, const int32_t* ids, float* out, int64_t B, int64_t D,
                       cudaStream_t stream = 0);
void embedding_backward(const float* dout, const int32_t* ids, float* dtable, int64_t B, int64_t D,
                        cudaStream_t stream = 0);
void timestep_embedding(const float* t, float* out, int64_t B, int64_t dim, double max_period,
                        cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
