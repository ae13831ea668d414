#include "kernels/cuda/attention.h"

#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/matmul.h"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

constexpr int kWarpsPerBlock = 8;

__device__ __forceinline__ float warp_max(float v) {
  for (int off = 16; off > 0; off >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, off));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// p[row] = softmax(s[row]); one warp per row of `cols`.
template <typename T>
__global__ void softmax_rows_kernel(const float* __restrict__ s, T* __restrict__ p, int64_t rows, int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;  // uniform per warp: the shuffles below see full warps
  const float* sr = s + row * cols;
  float mx = -INFINITY;
  for (int64_t j = lane; j < cols; j += 32) mx = fmaxf(mx, sr[j]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int64_t j = lane; j < cols; j += 32) sum += expf(sr[j] - mx);
  const float inv = 1.0f / warp_sum(sum);
  T* pr = p + row * cols;
  for (int64_t j = lane; j < cols; j += 32) st(pr, j, expf(sr[j] - mx) * inv);
}

// ds = p * (dp - sum_j p_j dp_j), per row (one warp).
template <typename T>
__global__ void softmax_backward_rows_kernel(const T* __restrict__ p, const float* __restrict__ dp,
                                             T* __restrict__ ds, int64_t rows, int64_t cols) {
  const int64_t row = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (row >= rows) return;
  const T* pr = p + row * cols;
  const float* dr = dp + row * cols;
  float dot = 0.0f;
  for (int64_t j = lane; j < cols; j += 32) dot += ld(pr, j) * dr[j];
  dot = warp_sum(dot);
  T* out = ds + row * cols;
  for (int64_t j = lane; j < cols; j += 32) st(out, j, ld(pr, j) * (dr[j] - dot));
}

unsigned row_blocks(int64_t rows) { return static_cast<unsigned>((rows + kWarpsPerBlock - 1) / kWarpsPerBlock); }

}  // namespace

void attention_forward(const void* qkv, void* out, void* probs, int64_t B, int64_t T, int64_t H, int64_t Dh,
                       DType io, cudaStream_t stream) {
  const char* op = "cuda::attention_forward";
  if (io != DType::F32 && io != DType::BF16) bad_dtype(op, io);
  if (B == 0 || T == 0 || H == 0 || Dh == 0) return;
  const int64_t D = H * Dh, ld3 = 3 * D, tt = T * T, es = static_cast<int64_t>(dtype_size(io));
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  Workspace scores(static_cast<size_t>(H * tt) * sizeof(float), stream);
  Workspace pscratch(probs ? 0 : static_cast<size_t>(H * tt * es), stream);
  const char* base = static_cast<const char*>(qkv);
  for (int64_t b = 0; b < B; ++b) {
    const char* q = base + b * T * ld3 * es;
    const char* k = q + D * es;
    const char* v = q + 2 * D * es;
    void* p = probs ? static_cast<void*>(static_cast<char*>(probs) + b * H * tt * es) : pscratch.f32();
    // S_h = scale q_h k_h^T  (fp32 scores)
    gemm_strided_batched(H, false, true, T, T, Dh, scale, q, ld3, Dh, k, ld3, Dh, 0.0f, scores.f32(), T, tt, io,
                         DType::F32, stream);
    VT_CUDA_DISPATCH_IO(op, io, Ty,
                        softmax_rows_kernel<Ty><<<row_blocks(H * T), 32 * kWarpsPerBlock, 0, stream>>>(
                            scores.f32(), static_cast<Ty*>(p), H * T, T));
    check_launch(op);
    // out_h = P_h V_h, written into the [T, H, Dh] layout.
    void* o = static_cast<char*>(out) + b * T * D * es;
    gemm_strided_batched(H, false, false, T, Dh, T, 1.0f, p, T, tt, v, ld3, Dh, 0.0f, o, D, Dh, io, io, stream);
  }
}

void attention_backward(const void* qkv, const void* probs, const void* dout, void* dqkv, int64_t B, int64_t T,
                        int64_t H, int64_t Dh, DType io, cudaStream_t stream) {
  const char* op = "cuda::attention_backward";
  if (io != DType::F32 && io != DType::BF16) bad_dtype(op, io);
  if (B == 0 || T == 0 || H == 0 || Dh == 0) return;
  const int64_t D = H * Dh, ld3 = 3 * D, tt = T * T, es = static_cast<int64_t>(dtype_size(io));
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  Workspace dp(static_cast<size_t>(H * tt) * sizeof(float), stream);
  Workspace ds(static_cast<size_t>(H * tt * es), stream);
  for (int64_t b = 0; b < B; ++b) {
    const char* q = static_cast<const char*>(qkv) + b * T * ld3 * es;
    const char* k = q + D * es;
    const char* v = q + 2 * D * es;
    const char* p = static_cast<const char*>(probs) + b * H * tt * es;
    const char* dO = static_cast<const char*>(dout) + b * T * D * es;
    char* dq = static_cast<char*>(dqkv) + b * T * ld3 * es;
    char* dk = dq + D * es;
    char* dv = dq + 2 * D * es;
    // dP_h = dO_h V_h^T (fp32), dV_h = P_h^T dO_h.
    gemm_strided_batched(H, false, true, T, T, Dh, 1.0f, dO, D, Dh, v, ld3, Dh, 0.0f, dp.f32(), T, tt, io,
                         DType::F32, stream);
    gemm_strided_batched(H, true, false, T, Dh, T, 1.0f, p, T, tt, dO, D, Dh, 0.0f, dv, ld3, Dh, io, io, stream);
    void* dsp = ds.f32();  // [H, T, T] in io
    VT_CUDA_DISPATCH_IO(op, io, Ty,
                        softmax_backward_rows_kernel<Ty><<<row_blocks(H * T), 32 * kWarpsPerBlock, 0, stream>>>(
                            reinterpret_cast<const Ty*>(p), dp.f32(), static_cast<Ty*>(dsp), H * T, T));
    check_launch(op);
    // dQ_h = scale dS_h K_h, dK_h = scale dS_h^T Q_h.
    gemm_strided_batched(H, false, false, T, Dh, T, scale, dsp, T, tt, k, ld3, Dh, 0.0f, dq, ld3, Dh, io, io, stream);
    gemm_strided_batched(H, true, false, T, Dh, T, scale, dsp, T, tt, q, ld3, Dh, 0.0f, dk, ld3, Dh, io, io, stream);
  }
}

}  // namespace cuda
}  // namespace vt
