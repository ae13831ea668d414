#include "kernels/cuda/modulate.h"

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/row_warp.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// Elementwise maps over [B, T, D] with per-(b, d) vectors. kind 0: modulate
// (out = x * (1 + a) + c), 1: gate (out = a * x), 2: modulate's dx
// (out = x * (1 + a)), 3: gate's dx (out = x * a). V elements per access
// (128-bit when D and the pointers allow, see map()); a vector never crosses
// a row, so it shares one sample's a and c rows.
template <typename T, int V>
__global__ void map_kernel(const T* x, const float* __restrict__ a, int64_t ld_a, const float* __restrict__ c,
                           int64_t ld_c, T* out, int64_t T_, int64_t D, int64_t total, int kind) {
  VT_GRID_STRIDE(vi, total / V) {
    const int64_t i = vi * V, d = i % D, b = i / (T_ * D);
    float v[V];
    ld_vec<V>(x, i, v);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float xv = v[k], av = a[b * ld_a + d + k];
      if (kind == 0) v[k] = xv * (1.0f + av) + c[b * ld_c + d + k];
      else if (kind == 1) v[k] = av * xv;
      else if (kind == 2) v[k] = xv * (1.0f + av);
      else v[k] = xv * av;
    }
    st_vec<V>(out, i, v);
  }
}

// Per (b, d): s1 = sum_t g, s2 = sum_t g * x, in token order (fp32). Each
// thread owns V consecutive columns of one sample (a warp a strip of 32 V
// columns) read with V-wide loads; the per-column order is V-independent.
template <typename T, int V>
__global__ void token_sums_kernel(const T* __restrict__ g, const T* __restrict__ x, float* s1, int64_t ld1,
                                  float* s2, int64_t ld2, int64_t B, int64_t T_, int64_t D) {
  VT_GRID_STRIDE(vi, B * D / V) {
    const int64_t i = vi * V, d = i % D, b = i / D;
    float a1[V], a2[V];
#pragma unroll
    for (int k = 0; k < V; ++k) a1[k] = a2[k] = 0.0f;
    for (int64_t t = 0; t < T_; ++t) {
      const int64_t j = (b * T_ + t) * D + d;
      float gv[V], xv[V];
      ld_vec<V>(g, j, gv);
      if (s2) ld_vec<V>(x, j, xv);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        a1[k] += gv[k];
        if (s2) a2[k] += gv[k] * xv[k];
      }
    }
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (s1) s1[b * ld1 + d + k] = a1[k];
      if (s2) s2[b * ld2 + d + k] = a2[k];
    }
  }
}

template <typename T, int V>
__global__ void gate_residual_kernel(const T* __restrict__ x, const float* __restrict__ gate, int64_t ld_gate,
                                     float alpha, float* residual, int64_t T_, int64_t D, int64_t total) {
  VT_GRID_STRIDE(vi, total / V) {
    const int64_t i = vi * V, d = i % D, b = i / (T_ * D);
    float xv[V], rv[V];
    ld_vec<V>(x, i, xv);
    ld_vec<V>(residual, i, rv);
#pragma unroll
    for (int k = 0; k < V; ++k) rv[k] += alpha * gate[b * ld_gate + d + k] * xv[k];
    st_vec<V>(residual, i, rv);
  }
}

// 128-bit accesses when D is a multiple of the vector width of Tio and the
// row tensors (of Tio, or fp32 for `f32_row`) are aligned to it.
template <typename Tio>
bool map_vec_ok(int64_t D, const void* x, const void* out, const float* f32_row = nullptr) {
  constexpr int V = vec_width<Tio>();
  return D % V == 0 && aligned_to(x, sizeof(Tio) * V) && aligned_to(out, sizeof(Tio) * V) &&
         aligned_to(f32_row, sizeof(float) * V);
}

void map(const char* op, const void* x, const float* a, int64_t ld_a, const float* c, int64_t ld_c, void* out,
         int64_t B, int64_t T_, int64_t D, int kind, DType io, cudaStream_t stream) {
  const int64_t total = B * T_ * D;
  if (total == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, Tio,
                      VT_ROW_VEC_DISPATCH(map_vec_ok<Tio>(D, x, out), Tio, V, auto k = map_kernel<Tio, V>;
                                          k<<<grid_1d(total / V, 256), 256, 0, stream>>>(
                                              static_cast<const Tio*>(x), a, ld_a, c, ld_c,
                                              static_cast<Tio*>(out), T_, D, total, kind)));
  check_launch(op);
}

void token_sums(const char* op, const void* g, const void* x, float* s1, int64_t ld1, float* s2, int64_t ld2,
                int64_t B, int64_t T_, int64_t D, DType io, cudaStream_t stream) {
  if ((!s1 && !s2) || B * D == 0) return;
  // At most 4 columns per thread: enough for 128-bit fp32 loads, and the
  // grid keeps B * D / 4 threads.
  VT_CUDA_DISPATCH_IO(op, io, Tio,
                      VT_ROW_VEC_DISPATCH(map_vec_ok<Tio>(D, g, x), Tio, V, constexpr int CV = V > 4 ? 4 : V;
                                          auto k = token_sums_kernel<Tio, CV>;
                                          k<<<grid_1d(B * D / CV, 128), 128, 0, stream>>>(
                                              static_cast<const Tio*>(g), static_cast<const Tio*>(x), s1, ld1, s2,
                                              ld2, B, T_, D)));
  check_launch(op);
}

}  // namespace

void modulate_forward(const void* x, const float* shift, int64_t ld_shift, const float* scale, int64_t ld_scale,
                      void* out, int64_t B, int64_t T, int64_t D, DType io, cudaStream_t stream) {
  map("cuda::modulate_forward", x, scale, ld_scale, shift, ld_shift, out, B, T, D, 0, io, stream);
}

void modulate_backward(const void* dout, const void* x, const float* scale, int64_t ld_scale, void* dx,
                       float* dshift, int64_t ld_dshift, float* dscale, int64_t ld_dscale, int64_t B, int64_t T,
                       int64_t D, DType io, cudaStream_t stream) {
  const char* op = "cuda::modulate_backward";
  // The sums read dout before dx (which may alias it) is written.
  token_sums(op, dout, x, dshift, ld_dshift, dscale, ld_dscale, B, T, D, io, stream);
  if (dx) map(op, dout, scale, ld_scale, nullptr, 0, dx, B, T, D, 2, io, stream);
}

void gate_forward(const void* x, const float* gate, int64_t ld_gate, void* out, int64_t B, int64_t T, int64_t D,
                  DType io, cudaStream_t stream) {
  map("cuda::gate_forward", x, gate, ld_gate, nullptr, 0, out, B, T, D, 1, io, stream);
}

void gate_backward(const void* dout, const void* x, const float* gate, int64_t ld_gate, void* dx, float* dgate,
                   int64_t ld_dgate, int64_t B, int64_t T, int64_t D, DType io, cudaStream_t stream) {
  const char* op = "cuda::gate_backward";
  token_sums(op, dout, x, nullptr, 0, dgate, ld_dgate, B, T, D, io, stream);
  if (dx) map(op, dout, gate, ld_gate, nullptr, 0, dx, B, T, D, 3, io, stream);
}

void gate_residual_add(const void* x, const float* gate, int64_t ld_gate, float alpha, float* residual, int64_t B,
                       int64_t T, int64_t D, DType io, cudaStream_t stream) {
  const char* op = "cuda::gate_residual_add";
  const int64_t total = B * T * D;
  if (total == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, Tio,
                      VT_ROW_VEC_DISPATCH(map_vec_ok<Tio>(D, x, nullptr, residual), Tio, V,
                                          auto k = gate_residual_kernel<Tio, V>;
                                          k<<<grid_1d(total / V, 256), 256, 0, stream>>>(
                                              static_cast<const Tio*>(x), gate, ld_gate, alpha, residual, T, D,
                                              total)));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
