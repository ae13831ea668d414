#include "kernels/cuda/drop_path.h"

#include "core/philox_block.h"
#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

__global__ void scales_kernel(float* __restrict__ scales, int64_t B, double keep, float kept_scale, uint64_t seed,
                              uint64_t stream, int64_t sample_offset, int64_t sample_stride) {
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < B;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double u = philox_first_uniform_double(seed, stream, static_cast<uint64_t>(sample_offset + b * sample_stride));
    scales[b] = u < keep ? kept_scale : 0.0f;
  }
}

__global__ void scales_at_kernel(float* __restrict__ scales, int64_t B, double keep, float kept_scale, uint64_t seed,
                                 const int64_t* __restrict__ step, uint64_t block, uint64_t sublayer,
                                 int64_t sample_offset, int64_t sample_stride) {
  const uint64_t stream = philox_stream_mix(static_cast<uint64_t>(*step), block, sublayer);
  for (int64_t b = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; b < B;
       b += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const double u = philox_first_uniform_double(seed, stream, static_cast<uint64_t>(sample_offset + b * sample_stride));
    scales[b] = u < keep ? kept_scale : 0.0f;
  }
}

// add: a uniform flag rather than a template parameter (one kernel per dtype).
template <typename T>
__global__ void apply_kernel(const T* __restrict__ x, const float* __restrict__ scales, T* out, int64_t B,
                             int64_t n, bool add) {
  const int64_t total = B * n;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float s = scales[i / n];
    if (add) {
      if (s != 0.0f) st(out, i, ld(out, i) + ld(x, i) * s);
    } else {
      st(out, i, s == 0.0f ? 0.0f : ld(x, i) * s);
    }
  }
}

void apply(const char* op, bool add, const void* x, const float* scales, void* out, int64_t B, int64_t n, DType io,
           cudaStream_t stream) {
  if (B * n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      apply_kernel<T><<<grid_1d(B * n, 256), 256, 0, stream>>>(static_cast<const T*>(x), scales,
                                                                              static_cast<T*>(out), B, n, add));
  check_launch(op);
}

}  // namespace

void drop_path_scales(float* scales, int64_t B, double keep, float kept_scale, uint64_t seed, uint64_t stream,
                      int64_t sample_offset, int64_t sample_stride, cudaStream_t cuda_stream) {
  if (B == 0) return;
  scales_kernel<<<grid_1d(B, 128), 128, 0, cuda_stream>>>(scales, B, keep, kept_scale, seed, stream, sample_offset,
                                                          sample_stride);
  check_launch("cuda::drop_path_scales");
}

void drop_path_scales_at(float* scales, int64_t B, double keep, float kept_scale, uint64_t seed, const int64_t* step,
                         uint64_t block, uint64_t sublayer, int64_t sample_offset, int64_t sample_stride,
                         cudaStream_t cuda_stream) {
  if (B == 0) return;
  scales_at_kernel<<<grid_1d(B, 128), 128, 0, cuda_stream>>>(scales, B, keep, kept_scale, seed, step, block, sublayer,
                                                             sample_offset, sample_stride);
  check_launch("cuda::drop_path_scales_at");
}

void drop_path_forward(const void* x, const float* scales, void* out, int64_t B, int64_t n, DType io,
                       cudaStream_t stream) {
  apply("cuda::drop_path_forward", false, x, scales, out, B, n, io, stream);
}

void drop_path_add(const void* x, const float* scales, void* residual, int64_t B, int64_t n, DType io,
                   cudaStream_t stream) {
  apply("cuda::drop_path_add", true, x, scales, residual, B, n, io, stream);
}

}  // namespace cuda
}  // namespace vt
