#include "kernels/cuda/layernorm.h"

#include <initializer_list>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/row_warp.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// Rows up to kWarpRowMaxD take the warp-per-row kernels (registers, vector
// loads). Wider rows take the block-per-row kernels, whose rows live in
// dynamic shared memory; 48 KiB is the launch default.
constexpr int64_t kMaxSmemFloats = 12288 - 256;  // 48 KiB minus 1 KiB for block_sum slots

void check_width(const char* op, int64_t d, int64_t copies) {
  if (d * copies > kMaxSmemFloats)
    throw std::invalid_argument(std::string(op) + ": row width d=" + std::to_string(d) +
                                " exceeds the CUDA kernel's limit of " + std::to_string(kMaxSmemFloats / copies));
}

template <typename T>
__global__ void ln_forward_kernel(const T* __restrict__ x, const float* __restrict__ w, const float* __restrict__ b,
                                  float eps, int64_t d, T* y, float* mean, float* rstd) {
  extern __shared__ float row[];
  const int64_t r = blockIdx.x;
  const T* xr = x + r * d;
  T* yr = y + r * d;
  float s[1] = {0.0f};
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float v = ld(xr, j);
    row[j] = v;
    s[0] += v;
  }
  block_sum(s);
  const float mu = s[0] / static_cast<float>(d);
  float q[1] = {0.0f};
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float c = row[j] - mu;
    q[0] += c * c;
  }
  block_sum(q);
  const float rs = 1.0f / sqrtf(q[0] / static_cast<float>(d) + eps);
  if (threadIdx.x == 0) {
    if (mean) mean[r] = mu;
    if (rstd) rstd[r] = rs;
  }
  // Each thread only touches its own row[j]: y may alias x.
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float t = (row[j] - mu) * rs;
    if (w) t *= w[j];
    if (b) t += b[j];
    st(yr, j, t);
  }
}

template <typename T>
__global__ void ln_backward_dx_kernel(const T* dy, const T* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ mean, const float* __restrict__ rstd, int64_t d,
                                      T* dx, bool accumulate) {
  extern __shared__ float sm[];
  float* gs = sm;       // g = dy * w
  float* xh = sm + d;   // x_hat
  const int64_t r = blockIdx.x;
  const T* dyr = dy + r * d;
  const T* xr = x + r * d;
  T* dxr = dx + r * d;
  const float mu = mean[r], rs = rstd[r];
  float s[2] = {0.0f, 0.0f};
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float g = w ? ld(dyr, j) * w[j] : ld(dyr, j);
    const float h = (ld(xr, j) - mu) * rs;
    gs[j] = g;
    xh[j] = h;
    s[0] += g;
    s[1] += g * h;
  }
  block_sum(s);
  const float inv_d = 1.0f / static_cast<float>(d);
  const float a = s[0] * inv_d, bb = s[1] * inv_d;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float v = rs * (gs[j] - a - xh[j] * bb);
    st(dxr, j, accumulate ? ld(dxr, j) + v : v);
  }
}

// Warp-per-row twins of the two kernels above for d <= kWarpRowMaxD
// (row_warp.cuh): the row stays in registers, V-wide loads.
template <typename T, int V>
__global__ void ln_forward_warp_kernel(const T* x, const float* __restrict__ w,
                                       const float* __restrict__ b, float eps, int64_t rows, int64_t d, T* y,
                                       float* mean, float* rstd) {
  const int64_t r = warp_row();
  if (r >= rows) return;  // a whole warp leaves: no shuffle waits on it
  const LaneRow<V> L{d, static_cast<int>(threadIdx.x & 31)};
  float v[kLaneElems];
  L.load(x + r * d, v);  // the whole row is read before y (which may alias x) is written
  float mu, rs;
  L.mean_rstd(v, eps, mu, rs);
  if (L.lane == 0) {
    if (mean) mean[r] = mu;
    if (rstd) rstd[r] = rs;
  }
#pragma unroll
  for (int c = 0; c < LaneRow<V>::C; ++c) {
    if (!L.has(c)) continue;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int64_t j = L.col(c) + k;
      float t = (v[c * V + k] - mu) * rs;
      if (w) t *= w[j];
      if (b) t += b[j];
      v[c * V + k] = t;
    }
  }
  L.store(y + r * d, v);
}

template <typename T, int V>
__global__ void ln_backward_dx_warp_kernel(const T* dy, const T* __restrict__ x, const float* __restrict__ w,
                                           const float* __restrict__ mean, const float* __restrict__ rstd,
                                           int64_t rows, int64_t d, T* dx, bool accumulate) {
  const int64_t r = warp_row();
  if (r >= rows) return;
  const LaneRow<V> L{d, static_cast<int>(threadIdx.x & 31)};
  float g[kLaneElems], h[kLaneElems];
  L.load(dy + r * d, g);
  L.load(x + r * d, h);
  const float mu = mean[r], rs = rstd[r];
  float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
  for (int c = 0; c < LaneRow<V>::C; ++c) {
    if (!L.has(c)) continue;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = c * V + k;
      if (w) g[i] *= w[L.col(c) + k];
      h[i] = (h[i] - mu) * rs;
      s0 += g[i];
      s1 += g[i] * h[i];
    }
  }
  const float inv_d = 1.0f / static_cast<float>(d);
  const float a = warp_sum(s0) * inv_d, bb = warp_sum(s1) * inv_d;
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

// Per (column, 64-row chunk): sums of dy * x_hat and dy.
template <typename T>
__global__ void ln_param_partials_kernel(const T* __restrict__ dy, const T* __restrict__ x,
                                         const float* __restrict__ mean, const float* __restrict__ rstd,
                                         int64_t rows, int64_t d, float* __restrict__ partial) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  const int64_t c = blockIdx.y;
  const int64_t r0 = c * kRowsPerChunk, r1 = min(rows, r0 + kRowsPerChunk);
  float gw = 0.0f, gb = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    const float g = ld(dy, r * d + j);
    gw += g * ((ld(x, r * d + j) - mean[r]) * rstd[r]);
    gb += g;
  }
  partial[(c * 2 + 0) * d + j] = gw;
  partial[(c * 2 + 1) * d + j] = gb;
}

}  // namespace

void layernorm_forward(const void* x, const float* weight, const float* bias, float eps, int64_t rows, int64_t d,
                       void* y, float* mean, float* rstd, DType io, cudaStream_t stream) {
  const char* op = "cuda::layernorm_forward";
  if (rows == 0 || d == 0) return;
  check_width(op, d, 1);
  if (d <= kWarpRowMaxD) {
    VT_CUDA_DISPATCH_IO(op, io, T, VT_ROW_VEC_DISPATCH(ln_vec_ok<T>(d, {x, y}), T, V,
                                                      auto k = ln_forward_warp_kernel<T, V>;
                                                      k<<<warp_row_blocks(rows), 32 * kWarpRows, 0, stream>>>(
                                                          static_cast<const T*>(x), weight, bias, eps, rows, d,
                                                          static_cast<T*>(y), mean, rstd)));
    check_launch(op);
    return;
  }
  const int threads = row_threads(d);
  const size_t smem = static_cast<size_t>(d) * sizeof(float);
  VT_CUDA_DISPATCH_IO(op, io, T,
                      ln_forward_kernel<T><<<static_cast<unsigned>(rows), threads, smem, stream>>>(
                          static_cast<const T*>(x), weight, bias, eps, d, static_cast<T*>(y), mean, rstd));
  check_launch(op);
}

void layernorm_backward(const void* dy, const void* x, const float* weight, const float* mean, const float* rstd,
                        int64_t rows, int64_t d, void* dx, bool accumulate_dx, float* dweight, float* dbias,
                        DType io, cudaStream_t stream) {
  const char* op = "cuda::layernorm_backward";
  if (rows == 0 || d == 0) return;
  check_width(op, d, 2);
  // Parameter gradients first: dx may alias dy and would overwrite it.
  if (dweight || dbias) {
    const int64_t chunks = row_chunks(rows);
    if (chunks > 65535) throw std::invalid_argument(std::string(op) + ": too many rows " + std::to_string(rows));
    Workspace ws(static_cast<size_t>(chunks * 2 * d) * sizeof(float), stream);
    const dim3 grid(static_cast<unsigned>((d + kColThreads - 1) / kColThreads), static_cast<unsigned>(chunks));
    VT_CUDA_DISPATCH_IO(op, io, T,
                        ln_param_partials_kernel<T><<<grid, kColThreads, 0, stream>>>(
                            static_cast<const T*>(dy), static_cast<const T*>(x), mean, rstd, rows, d, ws.f32()));
    check_launch(op);
    finalize_chunks<2>(ws.f32(), chunks, d, ChunkOutputs<2>{{dweight, dbias}}, stream, op);
  }
  if (!dx) return;
  if (d <= kWarpRowMaxD) {
    VT_CUDA_DISPATCH_IO(op, io, T, VT_ROW_VEC_DISPATCH(ln_vec_ok<T>(d, {dy, x, dx}), T, V,
                                                      auto k = ln_backward_dx_warp_kernel<T, V>;
                                                      k<<<warp_row_blocks(rows), 32 * kWarpRows, 0, stream>>>(
                                                          static_cast<const T*>(dy), static_cast<const T*>(x),
                                                          weight, mean, rstd, rows, d, static_cast<T*>(dx),
                                                          accumulate_dx)));
    check_launch(op);
    return;
  }
  const int threads = row_threads(d);
  const size_t smem = static_cast<size_t>(2 * d) * sizeof(float);
  VT_CUDA_DISPATCH_IO(op, io, T,
                      ln_backward_dx_kernel<T><<<static_cast<unsigned>(rows), threads, smem, stream>>>(
                          static_cast<const T*>(dy), static_cast<const T*>(x), weight, mean, rstd, d,
                          static_cast<T*>(dx), accumulate_dx));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
