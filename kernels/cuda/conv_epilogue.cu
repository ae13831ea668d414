#include "kernels/cuda/conv_epilogue.h"

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

struct Dims {
  int64_t o, oh, ow, s0, s1, s2;
};

// One thread per output element in (n, o, i, j) order (j fastest: W stride 1
// in every caller, so neighbouring threads touch neighbouring addresses).
template <typename T>
__global__ void bias_relu_kernel(T* y, Dims d, int64_t total, const float* __restrict__ b, bool relu) {
  VT_GRID_STRIDE(e, total) {
    const int64_t j = e % d.ow, t = e / d.ow, i = t % d.oh, t2 = t / d.oh, o = t2 % d.o, n = t2 / d.o;
    const int64_t at = n * d.s0 + o * d.s1 + i * d.s2 + j;
    float v = ld(y, at) + (b ? b[o] : 0.f);
    if (relu) v = v > 0.f ? v : 0.f;
    st(y, at, v);
  }
}

}  // namespace

void conv_bias_relu(void* y, DType io, const int64_t y_strides[4], int64_t n, int64_t o, int64_t oh, int64_t ow,
                    const float* b, bool relu, cudaStream_t stream) {
  const char* op = "cuda::conv_bias_relu";
  const int64_t total = n * o * oh * ow;
  if (total == 0 || (!b && !relu)) return;
  const Dims d{o, oh, ow, y_strides[0], y_strides[1], y_strides[2]};
  constexpr int kThreads = 256;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      bias_relu_kernel<T><<<grid_1d(total, kThreads), kThreads, 0, stream>>>(static_cast<T*>(y), d,
                                                                                               total, b, relu));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
