// Warp-per-row building blocks for the row kernels (LayerNorm, the
// SiameseNorm input kernel) and vector I/O for the elementwise row maps
// (SiameseNorm residual, modulate). Internal header; only .cu files include it.
//
// One warp owns one row (kWarpRows rows per block, no shared memory, no
// block barriers). Lane l keeps its share of the row in registers as
// C = kLaneElems / V chunks of V consecutive elements: chunk c holds columns
// (c * 32 + l) * V .. + V - 1. A row is therefore read from global memory
// once, with V-wide loads, and its mean and variance are two passes over
// registers combined by warp shuffles (the same two-pass centred variance as
// the CPU twins, which sum in double; fp32 here, as the block kernels did).
//
// V = 16 / sizeof(stream dtype) (one 128-bit load: 4 x fp32, 8 x bf16) when
// the row length is a multiple of V and every row pointer is aligned to
// V elements (vec_ok); otherwise V = 1, scalar loads, any width. The register
// budget (kLaneElems floats per cached row) limits this path to
// d <= kWarpRowMaxD; wider rows keep the block-per-row kernels.
// The layout follows the warp-per-row LayerNorm of Apex / OneFlow
// (apex/contrib/csrc/layer_norm, oneflow/core/cuda/layer_norm.cuh).
#pragma once
#include <cstdint>

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {
namespace detail {

constexpr int kWarpRows = 4;    // rows (= warps) per block: 128 threads
constexpr int kLaneElems = 32;  // cached floats per lane per row
constexpr int64_t kWarpRowMaxD = 32 * kLaneElems;

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

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int off = 16; off > 0; off >>= 1) v += __shfl_xor_sync(0xffffffffu, v, off);
  return v;
}

// One lane's view of a row of d columns.
template <int V>
struct LaneRow {
  static constexpr int C = kLaneElems / V;
  int64_t d;
  int lane;
  __device__ __forceinline__ int64_t col(int c) const { return (static_cast<int64_t>(c) * 32 + lane) * V; }
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

  // Mean and 1 / sqrt(biased variance + eps) of the row held in v (chunks
  // past the row are zero). Every lane of the warp must call it.
  __device__ __forceinline__ void mean_rstd(const float (&v)[kLaneElems], float eps, float& mu, float& rs) const {
    float s = 0.0f;
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i) s += v[i];
    mu = warp_sum(s) / static_cast<float>(d);
    float q = 0.0f;
#pragma unroll
    for (int c = 0; c < C; ++c) {
      if (!has(c)) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const float t = v[c * V + k] - mu;
        q += t * t;
      }
    }
    rs = 1.0f / sqrtf(warp_sum(q) / static_cast<float>(d) + eps);
  }
};

// The warp's row and lane in a warp-per-row launch (grid warp_row_blocks).
__device__ __forceinline__ int64_t warp_row() {
  return static_cast<int64_t>(blockIdx.x) * kWarpRows + static_cast<int64_t>(threadIdx.x >> 5);
}

inline unsigned warp_row_blocks(int64_t rows) { return static_cast<unsigned>((rows + kWarpRows - 1) / kWarpRows); }

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

}  // namespace detail
}  // namespace cuda
}  // namespace vt
