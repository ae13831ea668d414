#include "kernels/cuda/embedding.h"

#include <cmath>

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

__global__ void gather_kernel(const float* __restrict__ table, const int32_t* __restrict__ ids, float* __restrict__ out,
                              int64_t B, int64_t D) {
  VT_GRID_STRIDE(i, B * D) out[i] = table[static_cast<int64_t>(ids[i / D]) * D + i % D];
}

__global__ void scatter_add_kernel(const float* __restrict__ dout, const int32_t* __restrict__ ids,
                                   float* __restrict__ dtable, int64_t B, int64_t D) {
  VT_GRID_STRIDE(d, D) {
    for (int64_t b = 0; b < B; ++b) dtable[static_cast<int64_t>(ids[b]) * D + d] += dout[b * D + d];
  }
}

__global__ void timestep_kernel(const float* __restrict__ t, float* __restrict__ out, int64_t B, int64_t dim,
                                float neg_log) {
  const int64_t half = dim / 2;
  VT_GRID_STRIDE(i, B * half) {
    const int64_t k = i % half, b = i / half;
    const float e = (neg_log * static_cast<float>(k)) / static_cast<float>(half);
    const float freq = static_cast<float>(exp(static_cast<double>(e)));
    const float arg = t[b] * freq;
    out[b * dim + k] = static_cast<float>(cos(static_cast<double>(arg)));
    out[b * dim + half + k] = static_cast<float>(sin(static_cast<double>(arg)));
    if (k == 0 && dim % 2) out[b * dim + dim - 1] = 0.0f;
  }
}

}  // namespace

void embedding_forward(const float* table, const int32_t* ids, float* out, int64_t B, int64_t D,
                       cudaStream_t stream) {
  if (B * D == 0) return;
  gather_kernel<<<grid_1d(B * D, 256), 256, 0, stream>>>(table, ids, out, B, D);
  check_launch("cuda::embedding_forward");
}

void embedding_backward(const float* dout, const int32_t* ids, float* dtable, int64_t B, int64_t D,
                        cudaStream_t stream) {
  if (B * D == 0) return;
  scatter_add_kernel<<<grid_1d(D, 128), 128, 0, stream>>>(dout, ids, dtable, B, D);
  check_launch("cuda::embedding_backward");
}

void timestep_embedding(const float* t, float* out, int64_t B, int64_t dim, double max_period,
                        cudaStream_t stream) {
  if (B == 0 || dim < 2) return;
  // The same fp32 constant as the CPU, formed on the host.
  const float neg_log = static_cast<float>(-std::log(max_period));
  timestep_kernel<<<grid_1d(B * (dim / 2), 256), 256, 0, stream>>>(t, out, B, dim, neg_log);
  check_launch("cuda::timestep_embedding");
}

}  // namespace cuda
}  // namespace vt
