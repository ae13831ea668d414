// Row-in-registers building blocks for the row kernels (LayerNorm, the
// SiameseNorm input kernels) and vector I/O for the elementwise row maps
// (SiameseNorm residual, modulate) and the column sums. Internal header; only
// .cu files include it.
//
// A row of d columns is owned by W = row_warps(d) warps: one warp per row
// (kWarpRows rows per block, no shared memory, no block barriers) up to
// kWarpRowMaxD = 1024 columns; wider rows (DiT-XL's 1152, 2048, ...) one
// block of W warps per row, whose sums add the warps' shuffle sums in shared
// memory (block_sum). Thread t of the row's 32 W threads keeps its share in
// registers as C = kLaneElems / V chunks of V consecutive elements: chunk c
// holds columns (c * 32 W + t) * V .. + V - 1. A row is therefore read from
// global memory once, with V-wide loads, and its mean and variance are two
// passes over registers combined by shuffles (the same two-pass centred
// variance as the CPU twins, which sum in double; fp32 here).
//
// V = 16 / sizeof(stream dtype) (one 128-bit load: 4 x fp32, 8 x bf16) when
// the row length is a multiple of V and every row pointer is aligned to
// V elements (vec_ok); otherwise V = 1, scalar loads, any width. The register
// budget (kLaneElems floats per cached row) and the 1024 threads of a block
// limit rows to kRowMaxD = 32768 columns.
// The layout follows the warp-per-row LayerNorm of Apex / OneFlow
// (apex/contrib/csrc/layer_norm, oneflow/core/cuda/layer_norm.cuh), widened
// to several warps per row with a block reduction instead of a shared-memory
// copy of the row.
#pragma once
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {
namespace detail {

constexpr int kWarpRows = 4;    // rows (= warps) per block of a one-warp-per-row launch: 128 threads
constexpr int kLaneElems = 32;  // cached floats per thread per row
constexpr int64_t kWarpRowMaxD = 32 * kLaneElems;
constexpr int kMaxRowWarps = 32;  // 1024 threads, one block
constexpr int64_t kRowMaxD = kWarpRowMaxD * kMaxRowWarps;

// Warps that own one row of d columns: 1 up to kWarpRowMaxD, else just
// enough for kLaneElems per thread.
__host__ __device__ inline int row_warps(int64_t d) {
  return d <= kWarpRowMaxD ? 1 : static_cast<int>((d + kWarpRowMaxD - 1) / kWarpRowMaxD);
}

// Elements per 128-bit access of the stream dtype T.
template <typename T>
constexpr int vec_width() {
  return static_cast<int>(16 / sizeof(T));
}

// V elements moved as one access (alignas makes nvcc emit one vector load).
template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <int V, typename T>
__device__ __forceinline__ void ld_vec(const T* p, int64_t i, float* out) {
  const Pack<T, V> pk = *reinterpret_cast<const Pack<T, V>*>(p + i);
#pragma unroll
  for (int k = 0; k < V; ++k) out[k] = to_f(pk.v[k]);
}

template <int V, typename T>
__device__ __forceinline__ void st_vec(T* p, int64_t i, const float* in) {
  Pack<T, V> pk;
#pragma unroll
  for (int k = 0; k < V; ++k) pk.v[k] = from_f<T>(in[k]);
  *reinterpret_cast<Pack<T, V>*>(p + i) = pk;
}

// The value a store to T keeps (bf16 rounding; identity for fp32): a fused
// kernel that writes a row and goes on computing from it uses what a
// separate kernel would read back.
template <typename T>
__device__ __forceinline__ float as_stored(float v) {
  return to_f(from_f<T>(v));
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// One thread's view of a row of d columns (see the top of this file). M:
// several warps per row (row_warps(d) > 1). One-warp rows keep the stride
// 32 a compile-time constant, which keeps their address arithmetic (and
// register count) that of a plain warp-per-row kernel.
template <int V, bool M>
struct LaneRow {
  static constexpr int C = kLaneElems / V;
  int64_t d;
  int lane;     // thread index among the row's threads
  int threads;  // 32 * row_warps(d) (32 when !M)
  __device__ __forceinline__ int64_t col(int c) const {
    return (static_cast<int64_t>(c) * (M ? threads : 32) + lane) * V;
  }
  // Chunk c lies inside the row (d is a multiple of V, so all V columns do).
  __device__ __forceinline__ bool has(int c) const { return col(c) < d; }

  // v[c * V + k] = row[col(c) + k]; chunks past the row are zero.
  template <typename T>
  __device__ __forceinline__ void load(const T* row, float (&v)[kLaneElems]) const {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (has(c)) {
        ld_vec<V>(row, col(c), v + c * V);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) v[c * V + k] = 0.0f;
      }
    }
  }
  template <typename T>
  __device__ __forceinline__ void store(T* row, const float (&v)[kLaneElems]) const {
#pragma unroll
    for (int c = 0; c < C; ++c)
      if (has(c)) st_vec<V>(row, col(c), v + c * V);
  }

  // Row sums of N per-thread values, returned to every thread of the row.
  // Every thread of the row must call it (of the block, for multi-warp rows).
  template <int N>
  __device__ __forceinline__ void sum(float (&s)[N]) const {
    if (!M) {
#pragma unroll
      for (int i = 0; i < N; ++i) s[i] = warp_sum(s[i]);
    } else {
      block_sum(s);
    }
  }

  // Mean and 1 / sqrt(biased variance + eps) of the row held in v (chunks
  // past the row are zero).
  __device__ __forceinline__ void mean_rstd(const float (&v)[kLaneElems], float eps, float& mu, float& rs) const {
    float s[1] = {0.0f};
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i) s[0] += v[i];
    sum(s);
    mu = s[0] / static_cast<float>(d);
    float q[1] = {0.0f};
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (!has(c)) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float t = v[c * V + k] - mu;
        q[0] += t * t;
      }
    }
    sum(q);
    rs = 1.0f / sqrtf(q[0] / static_cast<float>(d) + eps);
  }

  // v = (v - mu) * rs * w + b over the thread's columns; w, b fp32 [d], null
  // = 1 / 0 (non-affine).
  __device__ __forceinline__ void normalize(float (&v)[kLaneElems], float mu, float rs, const float* w,
                                            const float* b) const {
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (!has(c)) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int64_t j = col(c) + k;
        float t = (v[c * V + k] - mu) * rs;
        if (w) t *= w[j];
        if (b) t += b[j];
        v[c * V + k] = t;
      }
    }
  }
};

// This thread's row and view of it in a row_grid launch (M must be
// row_warps(d) > 1, as VT_ROW_DISPATCH sets it). Threads of a
// one-warp-per-row block whose row is past the end get r >= rows and must
// leave (whole warps leave together: no shuffle waits on them); multi-warp
// rows never do (one row per block).
template <int V, bool M>
__device__ __forceinline__ LaneRow<V, M> lane_row(int64_t d, int64_t& r) {
  if (!M) {
    r = static_cast<int64_t>(blockIdx.x) * kWarpRows + static_cast<int64_t>(threadIdx.x >> 5);
    return LaneRow<V, M>{d, static_cast<int>(threadIdx.x & 31), 32};
  }
  r = blockIdx.x;
  return LaneRow<V, M>{d, static_cast<int>(threadIdx.x), static_cast<int>(blockDim.x)};
}

// The launch shape of the row kernels for rows of d <= kRowMaxD columns.
struct RowGrid {
  unsigned blocks;
  int threads;
};
inline RowGrid row_grid(int64_t rows, int64_t d) {
  const int w = row_warps(d);
  if (w == 1) return {static_cast<unsigned>((rows + kWarpRows - 1) / kWarpRows), 32 * kWarpRows};
  return {static_cast<unsigned>(rows), 32 * w};
}

// Blocks of kColThreads threads covering d columns with V columns per thread
// (the column-strip kernels of the parameter-gradient sums).
inline unsigned col_strip_blocks(int64_t d, int V) {
  const int64_t per_block = static_cast<int64_t>(kColThreads) * V;
  return static_cast<unsigned>((d + per_block - 1) / per_block);
}

// True when p (null counts as aligned) sits on a multiple of `bytes`.
inline bool aligned_to(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// Runs BODY with `constexpr int V` = the 128-bit vector width of T when vec
// is true, else 1 (scalar).
#define VT_ROW_VEC_DISPATCH(vec, T, V, ...)                            \
  if (vec) {                                                           \
    constexpr int V = ::vt::cuda::detail::vec_width<T>();              \
    __VA_ARGS__;                                                       \
  } else {                                                             \
    constexpr int V = 1;                                               \
    __VA_ARGS__;                                                       \
  }

// Runs BODY with `constexpr bool M` = several warps per row (row_warps(d) >
// 1) and V as VT_ROW_VEC_DISPATCH: the row kernels' template arguments.
#define VT_ROW_DISPATCH(vec, d, T, V, M, ...)             \
  if (::vt::cuda::detail::row_warps(d) > 1) {             \
    constexpr bool M = true;                              \
    VT_ROW_VEC_DISPATCH(vec, T, V, __VA_ARGS__)           \
  } else {                                                \
    constexpr bool M = false;                             \
    VT_ROW_VEC_DISPATCH(vec, T, V, __VA_ARGS__)           \
  }

}  // namespace detail
}  // namespace cuda
}  // namespace vt
