#include "kernels/cuda/activation.h"

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;
constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kCubic = 0.044715f;

__device__ __forceinline__ float act_f(ActKind k, float x) {
  switch (k) {
    case ActKind::GeluErf:
      return 0.5f * x * (1.0f + erff(x * kInvSqrt2));
    case ActKind::GeluTanh:
      return 0.5f * x * (1.0f + tanhf(kSqrt2OverPi * (x + kCubic * x * x * x)));
    default: {
      return x / (1.0f + expf(-x));
    }
  }
}

__device__ __forceinline__ float act_df(ActKind k, float x) {
  switch (k) {
    case ActKind::GeluErf:
      return 0.5f * (1.0f + erff(x * kInvSqrt2)) + x * kInvSqrt2Pi * expf(-0.5f * x * x);
    case ActKind::GeluTanh: {
      const float t = tanhf(kSqrt2OverPi * (x + kCubic * x * x * x));
      return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
    }
    default: {
      const float s = 1.0f / (1.0f + expf(-x));
      return s * (1.0f + x * (1.0f - s));
    }
  }
}

template <typename T>
__global__ void act_forward_kernel(ActKind k, const T* x, T* y, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    st(y, i, act_f(k, ld(x, i)));
}

template <typename T>
__global__ void act_backward_kernel(ActKind k, const T* dy, const T* x, T* dx, int64_t n) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    st(dx, i, ld(dy, i) * act_df(k, ld(x, i)));
}

}  // namespace

void activation_forward(ActKind kind, const void* x, void* y, int64_t n, DType io, cudaStream_t stream) {
  const char* op = "cuda::activation_forward";
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      act_forward_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(kind, static_cast<const T*>(x),
                                                                                  static_cast<T*>(y), n));
  check_launch(op);
}

void activation_backward(ActKind kind, const void* dy, const void* x, void* dx, int64_t n, DType io,
                         cudaStream_t stream) {
  const char* op = "cuda::activation_backward";
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      act_backward_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(
                          kind, static_cast<const T*>(dy), static_cast<const T*>(x), static_cast<T*>(dx), n));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
