#include "kernels/cuda/patch.h"

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// One thread per pixel (b, c, y, x): its token and feature per the layout.
template <typename T>
__global__ void permute_kernel(T* image, T* tokens, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p,
                               bool dit_layout, bool to_tokens) {
  const int64_t w = W / p, n_tok = (H / p) * w, F = C * p * p;
  VT_GRID_STRIDE(i, B * C * H * W) {
    const int64_t x = i % W, y = (i / W) % H, c = (i / (W * H)) % C, b = i / (W * H * C);
    const int64_t tok = (y / p) * w + x / p, a = y % p, bb = x % p;
    const int64_t f = dit_layout ? (a * p + bb) * C + c : (c * p + a) * p + bb;
    const int64_t t = (b * n_tok + tok) * F + f;
    if (to_tokens) tokens[t] = image[i];
    else image[i] = tokens[t];
  }
}

template <typename T>
__global__ void cls_select_kernel(const T* __restrict__ x, T* __restrict__ out, int64_t B, int64_t T1, int64_t D) {
  VT_GRID_STRIDE(i, B * D) out[i] = x[(i / D) * T1 * D + i % D];
}

template <typename T>
__global__ void cls_select_backward_kernel(const T* __restrict__ dout, T* __restrict__ dx, int64_t B, int64_t T1,
                                           int64_t D) {
  VT_GRID_STRIDE(i, B * T1 * D) {
    const int64_t d = i % D, t = (i / D) % T1, b = i / (D * T1);
    st(dx, i, t == 0 ? ld(dout, b * D + d) : 0.0f);
  }
}

template <typename T>
__global__ void cls_kernel(const T* __restrict__ x, const float* __restrict__ cls, T* __restrict__ out, int64_t B,
                           int64_t N, int64_t D) {
  VT_GRID_STRIDE(i, B * (N + 1) * D) {
    const int64_t d = i % D, t = (i / D) % (N + 1), b = i / (D * (N + 1));
    if (t == 0) st(out, i, cls[d]);
    else out[i] = x[(b * N + t - 1) * D + d];
  }
}

template <typename T>
__global__ void cls_dx_kernel(const T* __restrict__ dout, T* __restrict__ dx, int64_t B, int64_t N, int64_t D) {
  VT_GRID_STRIDE(i, B * N * D) {
    const int64_t d = i % D, t = (i / D) % N, b = i / (D * N);
    dx[i] = dout[(b * (N + 1) + t + 1) * D + d];
  }
}

// acc[j] += sum_b g[b * stride + j] for j < n, b in order (the CPU's order).
template <typename T>
__global__ void batch_sum_kernel(const T* __restrict__ g, float* __restrict__ acc, int64_t B, int64_t stride,
                                 int64_t n) {
  VT_GRID_STRIDE(j, n) {
    float a = acc[j];
    for (int64_t b = 0; b < B; ++b) a += ld(g, b * stride + j);
    acc[j] = a;
  }
}

template <typename T>
__global__ void pos_kernel(const T* x, const float* __restrict__ pos, T* out, int64_t total, int64_t n) {
  VT_GRID_STRIDE(i, total) st(out, i, ld(x, i) + pos[i % n]);
}

}  // namespace

void patch_permute(void* image, void* tokens, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p,
                   PatchLayout layout, bool to_tokens, DType io, cudaStream_t stream) {
  const char* op = "cuda::patch_permute";
  const int64_t n = B * C * H * W;
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      permute_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(
                          static_cast<T*>(image), static_cast<T*>(tokens), B, C, H, W, p,
                          layout == PatchLayout::DiT, to_tokens));
  check_launch(op);
}

void cls_concat(const void* x, const float* cls, void* out, int64_t B, int64_t N, int64_t D, DType io,
                cudaStream_t stream) {
  const char* op = "cuda::cls_concat";
  const int64_t n = B * (N + 1) * D;
  if (n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      cls_kernel<T><<<grid_1d(n, 256), 256, 0, stream>>>(static_cast<const T*>(x), cls,
                                                                          static_cast<T*>(out), B, N, D));
  check_launch(op);
}

void cls_select(const void* x, void* out, int64_t B, int64_t Tn, int64_t D, DType io, cudaStream_t stream) {
  const char* op = "cuda::cls_select";
  if (B * D == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      cls_select_kernel<T><<<grid_1d(B * D, 256), 256, 0, stream>>>(static_cast<const T*>(x),
                                                                                     static_cast<T*>(out), B, Tn, D));
  check_launch(op);
}

void cls_select_backward(const void* dout, void* dx, int64_t B, int64_t Tn, int64_t D, DType io, cudaStream_t stream) {
  const char* op = "cuda::cls_select_backward";
  if (B * Tn * D == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      cls_select_backward_kernel<T><<<grid_1d(B * Tn * D, 256), 256, 0, stream>>>(
                          static_cast<const T*>(dout), static_cast<T*>(dx), B, Tn, D));
  check_launch(op);
}

void cls_concat_backward(const void* dout, void* dx, float* dcls, int64_t B, int64_t N, int64_t D, DType io,
                         cudaStream_t stream) {
  const char* op = "cuda::cls_concat_backward";
  if (B * N * D > 0) {
    VT_CUDA_DISPATCH_IO(op, io, T,
                        cls_dx_kernel<T><<<grid_1d(B * N * D, 256), 256, 0, stream>>>(
                            static_cast<const T*>(dout), static_cast<T*>(dx), B, N, D));
    check_launch(op);
  }
  if (D == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      batch_sum_kernel<T><<<grid_1d(D, 256), 256, 0, stream>>>(static_cast<const T*>(dout), dcls, B,
                                                                                (N + 1) * D, D));
  check_launch(op);
}

void pos_embed_add(const void* x, const float* pos, void* out, int64_t B, int64_t T, int64_t D, DType io,
                   cudaStream_t stream) {
  const char* op = "cuda::pos_embed_add";
  const int64_t total = B * T * D;
  if (total == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, Tio,
                      pos_kernel<Tio><<<grid_1d(total, 256), 256, 0, stream>>>(static_cast<const Tio*>(x), pos,
                                                                                static_cast<Tio*>(out), total, T * D));
  check_launch(op);
}

void pos_embed_add_backward(const void* dout, float* dpos, int64_t B, int64_t T, int64_t D, DType io,
                            cudaStream_t stream) {
  const char* op = "cuda::pos_embed_add_backward";
  if (T * D == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, Tio,
                      batch_sum_kernel<Tio><<<grid_1d(T * D, 256), 256, 0, stream>>>(static_cast<const Tio*>(dout),
                                                                                      dpos, B, T * D, T * D));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
