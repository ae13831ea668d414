#include "kernels/cuda/modulate.h"

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// Elementwise maps over [B, T, D] with per-(b, d) vectors. kind 0: modulate
// (out = x * (1 + a) + c), 1: gate (out = a * x), 2: modulate's dx
// (out = x * (1 + a)), 3: gate's dx (out = x * a).
template <typename T>
__global__ void map_kernel(const T* x, const float* __restrict__ a, int64_t ld_a, const float* __restrict__ c,
                           int64_t ld_c, T* out, int64_t T_, int64_t D, int64_t total, int kind) {
  VT_GRID_STRIDE(i, total) {
    const int64_t d = i % D, b = i / (T_ * D);
    const float xv = ld(x, i), av = a[b * ld_a + d];
    float v;
    if (kind == 0) v = xv * (1.0f + av) + c[b * ld_c + d];
    else if (kind == 1) v = av * xv;
    else if (kind == 2) v = xv * (1.0f + av);
    else v = xv * av;
    st(out, i, v);
  }
}

// Per (b, d): s1 = sum_t g, s2 = sum_t g * x, in token order (fp32).
template <typename T>
__global__ void token_sums_kernel(const T* __restrict__ g, const T* __restrict__ x, float* s1, int64_t ld1,
                                  float* s2, int64_t ld2, int64_t B, int64_t T_, int64_t D) {
  VT_GRID_STRIDE(i, B * D) {
    const int64_t d = i % D, b = i / D;
    float a1 = 0.0f, a2 = 0.0f;
    for (int64_t t = 0; t < T_; ++t) {
      const int64_t k = (b * T_ + t) * D + d;
      const float gv = ld(g, k);
      a1 += gv;
      a2 += gv * ld(x, k);
    }
    if (s1) s1[b * ld1 + d] = a1;
    if (s2) s2[b * ld2 + d] = a2;
  }
}

template <typename T>
__global__ void gate_residual_kernel(const T* __restrict__ x, const float* __restrict__ gate, int64_t ld_gate,
                                     float alpha, float* residual, int64_t T_, int64_t D, int64_t total) {
  VT_GRID_STRIDE(i, total) {
    const int64_t d = i % D, b = i / (T_ * D);
    residual[i] += alpha * gate[b * ld_gate + d] * ld(x, i);
  }
}

void map(const char* op, const void* x, const float* a, int64_t ld_a, const float* c, int64_t ld_c, void* out,
         int64_t B, int64_t T_, int64_t D, int kind, DType io, cudaStream_t stream) {
  const int64_t total = B * T_ * D;
  if (total == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, Tio,
                      map_kernel<Tio><<<grid_1d(total, 256), 256, 0, stream>>>(
                          static_cast<const Tio*>(x), a, ld_a, c, ld_c, static_cast<Tio*>(out), T_, D, total, kind));
  check_launch(op);
}

void token_sums(const char* op, const void* g, const void* x, float* s1, int64_t ld1, float* s2, int64_t ld2,
                int64_t B, int64_t T_, int64_t D, DType io, cudaStream_t stream) {
  if ((!s1 && !s2) || B * D == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, Tio,
                      token_sums_kernel<Tio><<<grid_1d(B * D, 128), 128, 0, stream>>>(
                          static_cast<const Tio*>(g), static_cast<const Tio*>(x), s1, ld1, s2, ld2, B, T_, D));
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
                      gate_residual_kernel<Tio><<<grid_1d(total, 256), 256, 0, stream>>>(
                          static_cast<const Tio*>(x), gate, ld_gate, alpha, residual, T, D, total));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
