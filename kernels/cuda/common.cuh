// Internal helpers shared by the CUDA kernels in kernels/cuda/*.cu (not a
// public header; only .cu files include it).
//  - VT_CUDA_CHECK / vt_check_launch: CUDA errors become std::runtime_error
//    naming the op and the CUDA error string.
//  - ld/st: element I/O in fp32 or bf16 with fp32 arithmetic (bf16 stores
//    round to nearest even, as vt::f32_to_bf16 does on the host).
//  - block_sum: a block-wide sum of N floats (warp shuffles, then one shared
//    slot per warp), returned to every thread.
//  - Workspace: scratch device memory from vt's caching allocator (core/
//    allocator.h), allocated on the stream its kernels run on. It is
//    returned to the cache when the host function exits, while kernels using
//    it may still be queued: this is safe because the cache hands a block
//    out again only to later allocations on that same stream, whose kernels
//    are ordered after ours (core/allocator.h, "Streams").
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <stdexcept>
#include <string>

#include "core/allocator.h"
#include "core/dtype.h"

namespace vt {
namespace cuda {
namespace detail {

inline void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": CUDA error: " + cudaGetErrorString(e));
}
// After a kernel launch: reports bad launch configurations immediately.
inline void check_launch(const char* op) { check(cudaGetLastError(), op); }

[[noreturn]] inline void bad_dtype(const char* op, DType dt) {
  throw std::invalid_argument(std::string(op) + ": dtype " + dtype_name(dt) +
                              " not supported on CUDA (F32 or BF16)");
}

// Runs BODY with T = float or __nv_bfloat16 according to dt.
#define VT_CUDA_DISPATCH_IO(op, dt, T, ...)                   \
  switch (dt) {                                               \
    case ::vt::DType::F32: {                                  \
      using T = float;                                        \
      __VA_ARGS__;                                            \
      break;                                                  \
    }                                                         \
    case ::vt::DType::BF16: {                                 \
      using T = __nv_bfloat16;                                \
      __VA_ARGS__;                                            \
      break;                                                  \
    }                                                         \
    default:                                                  \
      ::vt::cuda::detail::bad_dtype(op, dt);                  \
  }

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) { return v; }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
__device__ __forceinline__ float ld(const T* p, int64_t i) { return to_f(p[i]); }
template <typename T>
__device__ __forceinline__ void st(T* p, int64_t i, float v) { p[i] = from_f<T>(v); }

// Sum of v[0..N) over the whole block; every thread receives the totals.
// blockDim.x must be a multiple of 32 and every thread must call it. The
// leading __syncthreads keeps a previous call's readers of `part` safe.
template <int N>
__device__ __forceinline__ void block_sum(float (&v)[N]) {
  __shared__ float part[N][32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
#pragma unroll
  for (int i = 0; i < N; ++i)
    for (int off = 16; off > 0; off >>= 1) v[i] += __shfl_xor_sync(0xffffffffu, v[i], off);
  __syncthreads();
  if (lane == 0) {
#pragma unroll
    for (int i = 0; i < N; ++i) part[i][warp] = v[i];
  }
  __syncthreads();
#pragma unroll
  for (int i = 0; i < N; ++i) {
    float t = lane < nwarps ? part[i][lane] : 0.0f;
    for (int off = 16; off > 0; off >>= 1) t += __shfl_xor_sync(0xffffffffu, t, off);
    v[i] = t;
  }
}

// Threads per row-block: enough to keep each thread at <= ~8 elements.
inline int row_threads(int64_t d) { return d > 2048 ? 512 : d > 512 ? 256 : 128; }

// Rows per chunk of a column reduction: a fixed, input-independent split, so
// the two-stage sums (per-chunk partials, then chunks added in order) give
// the same bits on every run.
constexpr int kColThreads = 256;
constexpr int64_t kRowsPerChunk = 64;
inline int64_t row_chunks(int64_t rows) { return rows == 0 ? 0 : (rows + kRowsPerChunk - 1) / kRowsPerChunk; }

class Workspace {
 public:
  explicit Workspace(size_t bytes, cudaStream_t stream = 0) : bytes_(bytes) {
    if (bytes_ == 0) return;
    check(cudaGetDevice(&device_), "cudaGetDevice");
    ptr_ = cuda_alloc(bytes_, device_, stream);
  }
  ~Workspace() {
    if (ptr_) cuda_free(ptr_, device_);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  float* f32() const { return static_cast<float*>(ptr_); }
  double* f64() const { return static_cast<double*>(ptr_); }

 private:
  size_t bytes_ = 0;
  int device_ = 0;
  void* ptr_ = nullptr;
};

// Grid-stride loop over i in [0, n) (pairs with grid_1d).
#define VT_GRID_STRIDE(i, n)                                                                \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

inline unsigned grid_1d(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  // Grid-stride loops cover the rest; 65535 * 8 blocks saturate any GPU.
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 524280 ? 524280 : blocks);
}

// Second stage of a deterministic column reduction: partial is
// [chunks][NQ][d] (per-chunk column sums); out[q][j] += the sum over chunks,
// for each non-null out[q]. One block per (32 columns, q): its 16 warps read
// 128-byte rows of the chunks c = w, w + 16, ... (each warp adds its chunks
// in chunk order), then a fixed tree adds the 16 warp sums. The order of
// every addition depends only on (chunks, d), never on timing, so the sums
// are the same bits on every run. (A thread per column looping over all
// chunks, the simple form, puts d / 256 blocks on the GPU: 2 at d = 384,
// with hundreds of dependent loads each.)
template <int NQ>
struct ChunkOutputs {
  float* out[NQ];
};
constexpr int kFinalizeWarps = 16;
template <int NQ>
__global__ void finalize_chunks_kernel(const float* __restrict__ partial, int64_t chunks, int64_t d,
                                       ChunkOutputs<NQ> o) {
  __shared__ float sums[kFinalizeWarps][33];
  const int64_t tiles = (d + 31) / 32;
  const int q = static_cast<int>(blockIdx.x / tiles);
  const int64_t j = (blockIdx.x % tiles) * 32 + (threadIdx.x & 31);
  const int w = threadIdx.x >> 5, lane = threadIdx.x & 31;
  float* out = nullptr;
#pragma unroll
  for (int i = 0; i < NQ; ++i)
    if (i == q) out = o.out[i];  // a register, not a local-memory copy of the array
  if (!out) return;              // the whole block: q is the block's
  float acc = 0.0f;
  if (j < d)
    for (int64_t c = w; c < chunks; c += kFinalizeWarps) acc += partial[(c * NQ + q) * d + j];
  sums[w][lane] = acc;
  __syncthreads();
  for (int s = kFinalizeWarps / 2; s > 0; s >>= 1) {
    if (w < s) sums[w][lane] += sums[w + s][lane];
    __syncthreads();
  }
  if (w == 0 && j < d) out[j] += sums[0][lane];
}
template <int NQ>
inline void finalize_chunks(const float* partial, int64_t chunks, int64_t d, ChunkOutputs<NQ> o,
                            cudaStream_t stream, const char* op) {
  const int64_t blocks = (d + 31) / 32 * NQ;
  if (blocks == 0) return;
  if (blocks > 2147483647) throw std::invalid_argument(std::string(op) + ": too many columns for the column sums");
  finalize_chunks_kernel<NQ><<<static_cast<unsigned>(blocks), kFinalizeWarps * 32, 0, stream>>>(partial, chunks, d, o);
  check_launch(op);
}

}  // namespace detail
}  // namespace cuda
}  // namespace vt
