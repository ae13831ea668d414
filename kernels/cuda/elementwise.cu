#include "kernels/cuda/elementwise.h"

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/optim.h"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

template <typename T>
__global__ void axpby_kernel(float alpha, const T* a, float beta, const T* b, T* out, int64_t n) {
  VT_GRID_STRIDE(i, n) st(out, i, alpha * ld(a, i) + beta * ld(b, i));
}
template <typename T>
__global__ void axpy_kernel(float alpha, const T* x, T* y, int64_t n) {
  VT_GRID_STRIDE(i, n) st(y, i, ld(y, i) + alpha * ld(x, i));
}
template <typename T>
__global__ void scale_kernel(const T* x, float alpha, T* out, int64_t n) {
  VT_GRID_STRIDE(i, n) st(out, i, alpha * ld(x, i));
}
template <typename T>
__global__ void mul_kernel(const T* a, const T* b, T* out, int64_t n) {
  VT_GRID_STRIDE(i, n) st(out, i, ld(a, i) * ld(b, i));
}
template <typename T>
__global__ void clamp_kernel(const T* x, float lo, float hi, T* out, int64_t n) {
  VT_GRID_STRIDE(i, n) {
    const float v = ld(x, i);
    st(out, i, v < lo ? lo : (v > hi ? hi : v));  // NaN passes, as the CPU twin
  }
}

constexpr int kSumThreads = 256;
constexpr int64_t kSumMaxBlocks = 1024;

// Fixed tree over a power-of-two block: the same order on every run.
__device__ double block_tree_sum(double v) {
  __shared__ double buf[kSumThreads];
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = kSumThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  return buf[0];
}

template <typename T>
__global__ void sum_partials_kernel(const T* x, int64_t n, bool squares, double* partial) {
  double acc = 0.0;
  VT_GRID_STRIDE(i, n) {
    const double v = ld(x, i);
    acc += squares ? v * v : v;
  }
  const double s = block_tree_sum(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

__global__ void sum_final_kernel(const double* partial, int64_t count, double* out) {
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < count; i += blockDim.x) acc += partial[i];
  const double s = block_tree_sum(acc);
  if (threadIdx.x == 0) *out = s;
}

__global__ void f32_to_bf16_kernel(const float* src, __nv_bfloat16* dst, int64_t n) {
  VT_GRID_STRIDE(i, n) st(dst, i, ld(src, i));
}
__global__ void bf16_to_f32_kernel(const __nv_bfloat16* src, float* dst, int64_t n) {
  VT_GRID_STRIDE(i, n) st(dst, i, ld(src, i));
}

}  // namespace

void convert(const void* src, DType src_type, void* dst, DType dst_type, int64_t n, cudaStream_t stream) {
  const char* op = "cuda::convert";
  if (n == 0) return;
  if (src_type == dst_type) {
    check(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * dtype_size(src_type), cudaMemcpyDeviceToDevice, stream),
          op);
    return;
  }
  if (src_type == DType::F32)
    f32_to_bf16_kernel<<<grid_1d(n, 256), 256, 0, stream>>>(
        static_cast<const float*>(src), static_cast<__nv_bfloat16*>(dst), n);
  else
    bf16_to_f32_kernel<<<grid_1d(n, 256), 256, 0, stream>>>(
        static_cast<const __nv_bfloat16*>(src), static_cast<float*>(dst), n);
  check_launch(op);
}

void axpby(float alpha, const void* a, float beta, const void* b, void* out, int64_t n, DType io,
           cudaStream_t stream) {
  const char* op = "cuda::axpby";
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      axpby_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(
                          alpha, static_cast<const T*>(a), beta, static_cast<const T*>(b), static_cast<T*>(out), n));
  check_launch(op);
}

void axpy(float alpha, const void* x, void* y, int64_t n, DType io, cudaStream_t stream) {
  const char* op = "cuda::axpy";
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      axpy_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(alpha, static_cast<const T*>(x),
                                                                           static_cast<T*>(y), n));
  check_launch(op);
}

void scale(const void* x, float alpha, void* out, int64_t n, DType io, cudaStream_t stream) {
  const char* op = "cuda::scale";
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      scale_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(static_cast<const T*>(x), alpha,
                                                                            static_cast<T*>(out), n));
  check_launch(op);
}

void clamp(const void* x, float lo, float hi, void* out, int64_t n, DType io, cudaStream_t stream) {
  const char* op = "cuda::clamp";
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      clamp_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(static_cast<const T*>(x), lo, hi,
                                                                            static_cast<T*>(out), n));
  check_launch(op);
}

void mul(const void* a, const void* b, void* out, int64_t n, DType io, cudaStream_t stream) {
  const char* op = "cuda::mul";
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      mul_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(
                          static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), n));
  check_launch(op);
}

void sum_to_device(const void* x, int64_t n, bool squares, DType io, double* out, cudaStream_t stream) {
  const char* op = "cuda::sum_to_device";
  if (n == 0) {
    check(cudaMemsetAsync(out, 0, sizeof(double), stream), op);
    return;
  }
  int64_t blocks = (n + kSumThreads - 1) / kSumThreads;
  if (blocks > kSumMaxBlocks) blocks = kSumMaxBlocks;
  Workspace ws(static_cast<size_t>(blocks) * sizeof(double), stream);
  double* partial = ws.f64();
  VT_CUDA_DISPATCH_IO(op, io, T,
                      sum_partials_kernel<T><<<static_cast<unsigned>(blocks), kSumThreads, 0, stream>>>(
                          static_cast<const T*>(x), n, squares, partial));
  check_launch(op);
  sum_final_kernel<<<1, kSumThreads, 0, stream>>>(partial, blocks, out);
  check_launch(op);
}

double sum(const void* x, int64_t n, bool squares, DType io, cudaStream_t stream) {
  const char* op = "cuda::sum";
  if (n == 0) return 0.0;
  Workspace ws(sizeof(double), stream);
  sum_to_device(x, n, squares, io, ws.f64(), stream);
  double result = 0.0;
  check(cudaMemcpyAsync(&result, ws.f64(), sizeof(double), cudaMemcpyDeviceToHost, stream), op);
  check(cudaStreamSynchronize(stream), op);
  return result;
}

double sum_of_squares(const float* x, int64_t n, cudaStream_t stream) {
  return sum(x, n, true, DType::F32, stream);
}

}  // namespace cuda
}  // namespace vt
