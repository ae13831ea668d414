#include "kernels/cuda/mixup.h"

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// a * x + b * y with each product and the sum rounded (the host's order).
__device__ __forceinline__ float lin2(float a, float x, float b, float y) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(__fmul_rn(a, x), __fmul_rn(b, y));
#else
  return a * x + b * y;
#endif
}
__device__ __forceinline__ double lin2d(double a, double x, double b, double y) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(__dmul_rn(a, x), __dmul_rn(b, y));
#else
  return a * x + b * y;
#endif
}

// One thread per element of the first half's samples (pair i, offset k).
template <typename T>
__global__ void mixup_kernel(T* images, int64_t half, int64_t B, int64_t n, float l, float m) {
  VT_GRID_STRIDE(e, half * n) {
    const int64_t i = e / n, k = e % n;
    T* a = images + i * n;
    T* b = images + (B - 1 - i) * n;
    const float va = ld(a, k), vb = ld(b, k);
    st(a, k, lin2(va, l, vb, m));
    st(b, k, lin2(vb, l, va, m));
  }
}

// One thread per box element of each pair: a swap.
template <typename T>
__global__ void cutmix_kernel(T* images, int64_t half, int64_t B, int64_t C, int64_t H, int64_t W, int y0, int bh,
                              int x0, int bw) {
  VT_GRID_STRIDE(e, half * C * bh * bw) {
    const int64_t x = x0 + e % bw, y = y0 + (e / bw) % bh, c = (e / (bw * bh)) % C, i = e / (bw * bh * C);
    const int64_t off = (c * H + y) * W + x, sample = C * H * W;
    T* a = images + i * sample + off;
    T* b = images + (B - 1 - i) * sample + off;
    const T t = *a;
    *a = *b;
    *b = t;
  }
}

__global__ void targets_kernel(const int32_t* __restrict__ labels, int64_t B, int64_t K, double lambda, double off,
                               double on, float* __restrict__ targets) {
  VT_GRID_STRIDE(e, B * K) {
    const int64_t i = e / K, k = e % K;
    const int64_t a = labels[i], b = labels[B - 1 - i];
    const double y1 = k == a ? on : off, y2 = k == b ? on : off;
    targets[e] = (k == a || k == b) ? static_cast<float>(lin2d(y1, lambda, y2, 1.0 - lambda)) : static_cast<float>(off);
  }
}

}  // namespace

void mixup_images(void* images, int64_t B, int64_t n, float l, float m, DType io, cudaStream_t stream) {
  const char* op = "cuda::mixup_images";
  const int64_t half = B / 2;
  if (half * n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      mixup_kernel<T><<<grid_1d(half * n, 256), 256, 0, stream>>>(static_cast<T*>(images), half, B,
                                                                                   n, l, m));
  check_launch(op);
}

void cutmix_images(void* images, int64_t B, int64_t C, int64_t H, int64_t W, int y0, int y1, int x0, int x1, DType io,
                   cudaStream_t stream) {
  const char* op = "cuda::cutmix_images";
  const int64_t half = B / 2, bh = y1 - y0, bw = x1 - x0;
  if (half * C * bh * bw <= 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      cutmix_kernel<T><<<grid_1d(half * C * bh * bw, 256), 256, 0, stream>>>(
                          static_cast<T*>(images), half, B, C, H, W, y0, static_cast<int>(bh), x0,
                          static_cast<int>(bw)));
  check_launch(op);
}

void mix_targets(const int32_t* labels, int64_t B, int64_t K, double lambda, double smoothing, float* targets,
                 cudaStream_t stream) {
  if (B * K == 0) return;
  // off and on formed on the host, as the CPU forms them.
  const double off = smoothing / static_cast<double>(K), on = 1.0 - smoothing + off;
  targets_kernel<<<grid_1d(B * K, 256), 256, 0, stream>>>(labels, B, K, lambda, off, on, targets);
  check_launch("cuda::mix_targets");
}

}  // namespace cuda
}  // namespace vt
