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
template <typename T, int V>
__global__ void ln_forward_kernel(const T* x, const float* __restrict__ w, const float* __restrict__ b, float eps,
                                  int64_t rows, int64_t d, T* y, float* mean, float* rstd) {
  int64_t r;
  const LaneRow<V> L = lane_row<V>(d, r);
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

template <typename T, int V>
__global__ void ln_backward_dx_kernel(const T* dy, const T* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ mean, const float* __restrict__ rstd, int64_t rows,
                                      int64_t d, T* dx, bool accumulate) {
  int64_t r;
  const LaneRow<V> L = lane_row<V>(d, r);
  if (r >= rows) return;
  float g[kLaneElems], h[kLaneElems];
  L.load(dy + r * d, g);
  L.load(x + r * d, h);
  const float mu = mean[r], rs = rstd[r];
  float s[2] = {0.0f, 0.0f};
#pragma unroll
  for (int c = 0; c < LaneRow<V>::C; ++c) {
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
  VT_CUDA_DISPATCH_IO(op, io, T, VT_ROW_VEC_DISPATCH(ln_vec_ok<T>(d, {x, y}), T, V,
                                                    auto k = ln_forward_kernel<T, V>;
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
  VT_CUDA_DISPATCH_IO(op, io, T, VT_ROW_VEC_DISPATCH(ln_vec_ok<T>(d, {dy, x, dx}), T, V,
                                                    auto k = ln_backward_dx_kernel<T, V>;
                                                    k<<<g.blocks, g.threads, 0, stream>>>(
                                                        static_cast<const T*>(dy), static_cast<const T*>(x), weight,
                                                        mean, rstd, rows, d, static_cast<T*>(dx), accumulate_dx)));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
