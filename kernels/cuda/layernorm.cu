#include "kernels/cuda/layernorm.h"

#include <initializer_list>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/row_warp.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

void check_width(const char* op, int64_t d) {
  if (d > kRowMaxD)
    throw std::invalid_argument(std::string(op) + ": row width d=" + std::to_string(d) +
                                " exceeds the CUDA kernel's limit of " + std::to_string(kRowMaxD));
}

// Row kernels (row_warp.cuh): the row stays in registers, V-wide loads.
template <typename T, int V, bool M>
__global__ void ln_forward_kernel(const T* x, const float* __restrict__ w, const float* __restrict__ b, float eps,
                                  int64_t rows, int64_t d, T* y, float* mean, float* rstd) {
  int64_t r;
  const LaneRow<V, M> L = lane_row<V, M>(d, r);
  if (r >= rows) return;
  float v[kLaneElems];
  L.load(x + r * d, v);  // the whole row is read before y (which may alias x) is written
  float mu, rs;
  L.mean_rstd(v, eps, mu, rs);
  if (L.lane == 0) {
    if (mean) mean[r] = mu;
    if (rstd) rstd[r] = rs;
  }
  L.normalize(v, mu, rs, w, b);
  L.store(y + r * d, v);
}

template <typename T, int V, bool M>
__global__ void ln_backward_dx_kernel(const T* dy, const T* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ mean, const float* __restrict__ rstd, int64_t rows,
                                      int64_t d, T* dx, bool accumulate) {
  int64_t r;
  const LaneRow<V, M> L = lane_row<V, M>(d, r);
  if (r >= rows) return;
  float g[kLaneElems], h[kLaneElems];
  L.load(dy + r * d, g);
  L.load(x + r * d, h);
  const float mu = mean[r], rs = rstd[r];
  float s[2] = {0.0f, 0.0f};
#pragma unroll
  for (int c = 0; c < LaneRow<V, M>::C; ++c) {
    if (!L.has(c)) continue;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = c * V + k;
      if (w) g[i] *= w[L.col(c) + k];
      h[i] = (h[i] - mu) * rs;
      s[0] += g[i];
      s[1] += g[i] * h[i];
    }
  }
  L.sum(s);
  const float inv_d = 1.0f / static_cast<float>(d);
  const float a = s[0] * inv_d, bb = s[1] * inv_d;
  float old[kLaneElems];
  if (accumulate) L.load(dx + r * d, old);
#pragma unroll
  for (int i = 0; i < kLaneElems; ++i) {
    const float v = rs * (g[i] - a - h[i] * bb);
    g[i] = accumulate ? old[i] + v : v;
  }
  L.store(dx + r * d, g);  // dy (which dx may alias) was read in full above
}

// dx and the parameter-gradient partials in one pass (rows of d <=
// kWarpRowMaxD): dy and x are read once instead of once more by
// ln_param_partials_kernel. Block c owns rows [c * kFusedChunkRows, + kFusedChunkRows);
// its warp w takes rows w, w + kWarpRows, ... of them, summing dy * x_hat and
// dy per column in registers; the warps' sums are then added in warp order
// in shared memory and written to partial [chunks][2][d]. The order is fixed
// by the shapes alone: identical bits every run.
constexpr int64_t kFusedChunkRows = 32;

template <typename T, int V>
__global__ void ln_backward_fused_kernel(const T* dy, const T* __restrict__ x, const float* __restrict__ w,
                                         const float* __restrict__ mean, const float* __restrict__ rstd, int64_t rows,
                                         int64_t d, T* dx, bool accumulate, float* __restrict__ partial) {
  __shared__ float acc[2 * kWarpRowMaxD];
  const int warp = static_cast<int>(threadIdx.x >> 5);
  const LaneRow<V, false> L{d, static_cast<int>(threadIdx.x & 31), 32};
  const int64_t c = blockIdx.x, r0 = c * kFusedChunkRows, r1 = min(rows, r0 + kFusedChunkRows);
  float pw[kLaneElems], pb[kLaneElems];
#pragma unroll
  for (int i = 0; i < kLaneElems; ++i) pw[i] = pb[i] = 0.0f;
  // Every warp runs every step, past the last row on zeros: the warps reach
  // the barriers below together, and so do the emulator's block-wide shuffles.
  for (int step = 0; step < kFusedChunkRows / kWarpRows; ++step) {
    const int64_t r = r0 + warp + static_cast<int64_t>(step) * kWarpRows;
    const bool live = r < r1;
    float g[kLaneElems], h[kLaneElems];
    if (live) {
      L.load(dy + r * d, g);
      L.load(x + r * d, h);
    } else {
#pragma unroll
      for (int i = 0; i < kLaneElems; ++i) g[i] = h[i] = 0.0f;
    }
    const float mu = live ? mean[r] : 0.0f, rs = live ? rstd[r] : 0.0f;
    float s[2] = {0.0f, 0.0f};
#pragma unroll
    for (int cc = 0; cc < LaneRow<V, false>::C; ++cc) {
      if (!L.has(cc)) continue;
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int i = cc * V + k;
        h[i] = (h[i] - mu) * rs;
        pw[i] += g[i] * h[i];
        pb[i] += g[i];
        if (w) g[i] *= w[L.col(cc) + k];
        s[0] += g[i];
        s[1] += g[i] * h[i];
      }
    }
    L.sum(s);
    const float inv_d = 1.0f / static_cast<float>(d);
    const float a = s[0] * inv_d, bb = s[1] * inv_d;
    if (!live) continue;
#pragma unroll
    for (int cc = 0; cc < LaneRow<V, false>::C; ++cc) {
      if (!L.has(cc)) continue;
      float o[V];
      if (accumulate) ld_vec<V>(dx + r * d, L.col(cc), o);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int i = cc * V + k;
        const float v = rs * (g[i] - a - h[i] * bb);
        o[k] = accumulate ? o[k] + v : v;
      }
      st_vec<V>(dx + r * d, L.col(cc), o);  // dy (which dx may alias) was read in full above
    }
  }
  // The warps' column sums, added in warp order.
  for (int q = 0; q < kWarpRows; ++q) {
    if (warp == q) {
#pragma unroll
      for (int cc = 0; cc < LaneRow<V, false>::C; ++cc) {
        if (!L.has(cc)) continue;
#pragma unroll
        for (int k = 0; k < V; ++k) {
          const int64_t j = L.col(cc) + k;
          const int i = cc * V + k;
          acc[j] = q == 0 ? pw[i] : acc[j] + pw[i];
          acc[kWarpRowMaxD + j] = q == 0 ? pb[i] : acc[kWarpRowMaxD + j] + pb[i];
        }
      }
    }
    __syncthreads();
  }
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    partial[(c * 2 + 0) * d + j] = acc[j];
    partial[(c * 2 + 1) * d + j] = acc[kWarpRowMaxD + j];
  }
}

// 128-bit loads need d a multiple of the vector width and aligned rows.
template <typename T>
bool ln_vec_ok(int64_t d, std::initializer_list<const void*> rows) {
  if (d % vec_width<T>() != 0) return false;
  for (const void* p : rows)
    if (!aligned_to(p, sizeof(T) * vec_width<T>())) return false;
  return true;
}

// Per (column, 64-row chunk): sums of dy * x_hat and dy. Each thread owns V
// consecutive columns (a warp a strip of 32 V) and reads them with V-wide
// loads; every column is summed over the chunk's rows in row order whatever
// V is, so the bits do not depend on the vector width.
template <typename T, int V>
__global__ void ln_param_partials_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                         const float* __restrict__ mean, const float* __restrict__ rstd,
                                         int64_t rows, int64_t d, float* __restrict__ partial) {
  const int64_t j = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (j >= d) return;
  const int64_t c = blockIdx.y;
  const int64_t r0 = c * kRowsPerChunk, r1 = min(rows, r0 + kRowsPerChunk);
  float gw[V], gb[V];
#pragma unroll
  for (int k = 0; k < V; ++k) gw[k] = gb[k] = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    float g[V], xv[V];
    ld_vec<V>(dy, r * d + j, g);
    ld_vec<V>(x, r * d + j, xv);
    const float mu = mean[r], rs = rstd[r];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      gw[k] += g[k] * ((xv[k] - mu) * rs);
      gb[k] += g[k];
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) {
    partial[(c * 2 + 0) * d + j + k] = gw[k];
    partial[(c * 2 + 1) * d + j + k] = gb[k];
  }
}

}  // namespace

void layernorm_forward(const void* x, const float* weight, const float* bias, float eps, int64_t rows, int64_t d,
                       void* y, float* mean, float* rstd, DType io, cudaStream_t stream) {
  const char* op = "cuda::layernorm_forward";
  if (rows == 0 || d == 0) return;
  check_width(op, d);
  const RowGrid g = row_grid(rows, d);
  VT_CUDA_DISPATCH_IO(op, io, T, VT_ROW_DISPATCH(ln_vec_ok<T>(d, {x, y}), d, T, V, M,
                                                auto k = ln_forward_kernel<T, V, M>;
                                                k<<<g.blocks, g.threads, 0, stream>>>(
                                                    static_cast<const T*>(x), weight, bias, eps, rows, d,
                                                    static_cast<T*>(y), mean, rstd)));
  check_launch(op);
}

void layernorm_backward(const void* dy, const void* x, const float* weight, const float* mean, const float* rstd,
                        int64_t rows, int64_t d, void* dx, bool accumulate_dx, float* dweight, float* dbias,
                        DType io, cudaStream_t stream) {
  const char* op = "cuda::layernorm_backward";
  if (rows == 0 || d == 0) return;
  check_width(op, d);
  if (dx && (dweight || dbias) && row_warps(d) == 1) {  // one pass over dy and x
    const int64_t chunks = (rows + kFusedChunkRows - 1) / kFusedChunkRows;
    Workspace ws(static_cast<size_t>(chunks * 2 * d) * sizeof(float), stream);
    VT_CUDA_DISPATCH_IO(op, io, T, VT_ROW_VEC_DISPATCH(ln_vec_ok<T>(d, {dy, x, dx}), T, V,
                                                      auto k = ln_backward_fused_kernel<T, V>;
                                                      k<<<static_cast<unsigned>(chunks), 32 * kWarpRows, 0, stream>>>(
                                                          static_cast<const T*>(dy), static_cast<const T*>(x), weight,
                                                          mean, rstd, rows, d, static_cast<T*>(dx), accumulate_dx,
                                                          ws.f32())));
    check_launch(op);
    finalize_chunks<2>(ws.f32(), chunks, d, ChunkOutputs<2>{{dweight, dbias}}, stream, op);
    return;
  }
  // Parameter gradients first: dx may alias dy and would overwrite it.
  if (dweight || dbias) {
    const int64_t chunks = row_chunks(rows);
    if (chunks > 65535) throw std::invalid_argument(std::string(op) + ": too many rows " + std::to_string(rows));
    Workspace ws(static_cast<size_t>(chunks * 2 * d) * sizeof(float), stream);
    VT_CUDA_DISPATCH_IO(op, io, T,
                        VT_ROW_VEC_DISPATCH(ln_vec_ok<T>(d, {dy, x}), T, V, auto k = ln_param_partials_kernel<T, V>;
                                            const dim3 grid(col_strip_blocks(d, V), static_cast<unsigned>(chunks));
                                            k<<<grid, kColThreads, 0, stream>>>(
                                                static_cast<const T*>(dy), static_cast<const T*>(x), mean, rstd,
                                                rows, d, ws.f32())));
    check_launch(op);
    finalize_chunks<2>(ws.f32(), chunks, d, ChunkOutputs<2>{{dweight, dbias}}, stream, op);
  }
  if (!dx) return;
  const RowGrid g = row_grid(rows, d);
  VT_CUDA_DISPATCH_IO(op, io, T, VT_ROW_DISPATCH(ln_vec_ok<T>(d, {dy, x, dx}), d, T, V, M,
                                                auto k = ln_backward_dx_kernel<T, V, M>;
                                                k<<<g.blocks, g.threads, 0, stream>>>(
                                                    static_cast<const T*>(dy), static_cast<const T*>(x), weight, mean,
                                                    rstd, rows, d, static_cast<T*>(dx), accumulate_dx)));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
