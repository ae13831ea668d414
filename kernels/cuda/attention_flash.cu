// Flash attention (FlashAttention-2, Dao 2023, arXiv:2307.08691, Algorithms 1
// and 2) on CUDA cores: one launch over (batch x heads x row tiles) per pass,
// no [T, T] tensor in memory. Contract in kernels/cuda/attention.h.
//
// Mapping: one thread owns one query row (forward, dQ) or one key row (dK,
// dV) and keeps its row vectors and fp32 accumulators in registers; the block
// streams tiles of the other side's rows through shared memory, which every
// thread reads at the same address (a broadcast). No warp shuffles: the
// kernels need only __syncthreads, so the emulator (tests/cuda/emu) runs them
// exactly as written. The fast bf16 path on a GPU is cuDNN's fused SDPA
// (attention_cudnn.cu); these kernels serve fp32, shapes cuDNN rejects, and
// builds without cuDNN.
#include <cmath>

#include "kernels/cuda/attention.h"
#include "kernels/cuda/common.cuh"
#ifdef VT_CUDNN_SDPA
#include "kernels/cuda/attention_cudnn.h"
#endif

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// Per head-dim bucket: rows owned by a block (= threads) and rows per
// streamed tile, chosen so the static shared memory stays under 48 KiB.
// Head dims between buckets are zero-padded (zeros add nothing to the dots).
template <int DH>
struct Cfg {
  static constexpr int kRows = DH <= 64 ? 64 : 32;
  static constexpr int kTile = DH <= 64 ? 32 : 16;
};

// Forward (Algorithm 1): online softmax over key tiles; writes out and, when
// lse is non-null, the row's logsumexp m + log(l) of the scaled scores.
template <typename Ty, int DH>
__global__ void flash_fwd_kernel(const Ty* __restrict__ qkv, Ty* __restrict__ out, float* __restrict__ lse,
                                 int T, int H, int Dh, float scale) {
  constexpr int kRows = Cfg<DH>::kRows, kTile = Cfg<DH>::kTile;
  __shared__ float ks[kTile][DH];
  __shared__ float vs[kTile][DH];
  const int bh = blockIdx.y, b = bh / H, h = bh % H;
  const int64_t D = static_cast<int64_t>(H) * Dh, ld3 = 3 * D;
  const Ty* base = qkv + static_cast<int64_t>(b) * T * ld3 + static_cast<int64_t>(h) * Dh;
  const int i = blockIdx.x * kRows + threadIdx.x;
  const bool valid = i < T;
  float q[DH], o[DH];
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    q[d] = valid && d < Dh ? ld(base, i * ld3 + d) : 0.0f;
    o[d] = 0.0f;
  }
  float m = -INFINITY, l = 0.0f;
  for (int j0 = 0; j0 < T; j0 += kTile) {
    __syncthreads();  // the previous tile's readers are done
    for (int e = threadIdx.x; e < kTile * DH; e += kRows) {
      const int r = e / DH, d = e % DH, j = j0 + r;
      const bool ok = j < T && d < Dh;
      ks[r][d] = ok ? ld(base, j * ld3 + D + d) : 0.0f;
      vs[r][d] = ok ? ld(base, j * ld3 + 2 * D + d) : 0.0f;
    }
    __syncthreads();
    const int nj = T - j0 < kTile ? T - j0 : kTile;
    float s[kTile];
    float tmax = -INFINITY;
#pragma unroll
    for (int r = 0; r < kTile; ++r) {
      float a = 0.0f;
#pragma unroll
      for (int d = 0; d < DH; ++d) a += q[d] * ks[r][d];
      s[r] = a * scale;
      if (r < nj) tmax = fmaxf(tmax, s[r]);
    }
    const float mnew = fmaxf(m, tmax);
    const float corr = expf(m - mnew);  // 0 on the first tile (m = -inf)
    l *= corr;
#pragma unroll
    for (int d = 0; d < DH; ++d) o[d] *= corr;
#pragma unroll
    for (int r = 0; r < kTile; ++r) {
      if (r >= nj) break;
      const float p = expf(s[r] - mnew);
      l += p;
#pragma unroll
      for (int d = 0; d < DH; ++d) o[d] += p * vs[r][d];
    }
    m = mnew;
  }
  if (!valid) return;
  const float inv = 1.0f / l;
  Ty* orow = out + (static_cast<int64_t>(b) * T + i) * D + static_cast<int64_t>(h) * Dh;
#pragma unroll
  for (int d = 0; d < DH; ++d)
    if (d < Dh) st(orow, d, o[d] * inv);
  if (lse) lse[static_cast<int64_t>(bh) * T + i] = m + logf(l);
}

// Dsum[b, h, i] = sum_d dO[b, i, h, d] * O[b, i, h, d]  (= rowsum(P o dP)).
template <typename Ty>
__global__ void flash_bwd_dot_kernel(const Ty* __restrict__ out, const Ty* __restrict__ dout,
                                     float* __restrict__ dsum, int64_t rows, int T, int H, int Dh) {
  const int64_t r = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  const int64_t bh = r / T, i = r % T, b = bh / H, h = bh % H;
  const int64_t off = (b * T + i) * H * Dh + h * Dh;
  float a = 0.0f;
  for (int d = 0; d < Dh; ++d) a += ld(out, off + d) * ld(dout, off + d);
  dsum[r] = a;
}

// dQ_i = scale * sum_j P_ij (dP_ij - D_i) k_j, P recomputed from lse.
template <typename Ty, int DH>
__global__ void flash_bwd_dq_kernel(const Ty* __restrict__ qkv, const Ty* __restrict__ dout,
                                    const float* __restrict__ lse, const float* __restrict__ dsum,
                                    Ty* __restrict__ dqkv, int T, int H, int Dh, float scale) {
  constexpr int kRows = Cfg<DH>::kRows, kTile = Cfg<DH>::kTile;
  __shared__ float ks[kTile][DH];
  __shared__ float vs[kTile][DH];
  const int bh = blockIdx.y, b = bh / H, h = bh % H;
  const int64_t D = static_cast<int64_t>(H) * Dh, ld3 = 3 * D;
  const Ty* base = qkv + static_cast<int64_t>(b) * T * ld3 + static_cast<int64_t>(h) * Dh;
  const Ty* dobase = dout + static_cast<int64_t>(b) * T * D + static_cast<int64_t>(h) * Dh;
  const int i = blockIdx.x * kRows + threadIdx.x;
  const bool valid = i < T;
  float q[DH], dO[DH], dq[DH];
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    q[d] = valid && d < Dh ? ld(base, i * ld3 + d) : 0.0f;
    dO[d] = valid && d < Dh ? ld(dobase, i * D + d) : 0.0f;
    dq[d] = 0.0f;
  }
  const float li = valid ? lse[static_cast<int64_t>(bh) * T + i] : 0.0f;
  const float di = valid ? dsum[static_cast<int64_t>(bh) * T + i] : 0.0f;
  for (int j0 = 0; j0 < T; j0 += kTile) {
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * DH; e += kRows) {
      const int r = e / DH, d = e % DH, j = j0 + r;
      const bool ok = j < T && d < Dh;
      ks[r][d] = ok ? ld(base, j * ld3 + D + d) : 0.0f;
      vs[r][d] = ok ? ld(base, j * ld3 + 2 * D + d) : 0.0f;
    }
    __syncthreads();
    const int nj = T - j0 < kTile ? T - j0 : kTile;
#pragma unroll 4
    for (int r = 0; r < kTile; ++r) {
      if (r >= nj) break;
      float s = 0.0f, dp = 0.0f;
#pragma unroll
      for (int d = 0; d < DH; ++d) {
        s += q[d] * ks[r][d];
        dp += dO[d] * vs[r][d];
      }
      const float ds = expf(s * scale - li) * (dp - di);
#pragma unroll
      for (int d = 0; d < DH; ++d) dq[d] += ds * ks[r][d];
    }
  }
  if (!valid) return;
  Ty* row = dqkv + (static_cast<int64_t>(b) * T + i) * ld3 + static_cast<int64_t>(h) * Dh;
#pragma unroll
  for (int d = 0; d < DH; ++d)
    if (d < Dh) st(row, d, dq[d] * scale);
}

// dV_j = sum_i P_ij dO_i;  dK_j = scale * sum_i P_ij (dP_ij - D_i) q_i.
// The thread's own v_j sits in shared memory (row stride DH + 1: the threads
// read different rows at once, the padding spreads them over the banks) to
// leave registers for k_j and the two accumulators.
template <typename Ty, int DH>
__global__ void flash_bwd_dkdv_kernel(const Ty* __restrict__ qkv, const Ty* __restrict__ dout,
                                      const float* __restrict__ lse, const float* __restrict__ dsum,
                                      Ty* __restrict__ dqkv, int T, int H, int Dh, float scale) {
  constexpr int kRows = Cfg<DH>::kRows, kTile = Cfg<DH>::kTile;
  __shared__ float qs[kTile][DH];
  __shared__ float dos[kTile][DH];
  __shared__ float ls[kTile], dsm[kTile];
  __shared__ float vown[kRows][DH + 1];
  const int bh = blockIdx.y, b = bh / H, h = bh % H;
  const int64_t D = static_cast<int64_t>(H) * Dh, ld3 = 3 * D;
  const Ty* base = qkv + static_cast<int64_t>(b) * T * ld3 + static_cast<int64_t>(h) * Dh;
  const Ty* dobase = dout + static_cast<int64_t>(b) * T * D + static_cast<int64_t>(h) * Dh;
  const int j = blockIdx.x * kRows + threadIdx.x;
  const bool valid = j < T;
  float k[DH], dk[DH], dv[DH];
#pragma unroll
  for (int d = 0; d < DH; ++d) {
    k[d] = valid && d < Dh ? ld(base, j * ld3 + D + d) : 0.0f;
    vown[threadIdx.x][d] = valid && d < Dh ? ld(base, j * ld3 + 2 * D + d) : 0.0f;
    dk[d] = 0.0f;
    dv[d] = 0.0f;
  }
  for (int i0 = 0; i0 < T; i0 += kTile) {
    __syncthreads();
    for (int e = threadIdx.x; e < kTile * DH; e += kRows) {
      const int r = e / DH, d = e % DH, i = i0 + r;
      const bool ok = i < T && d < Dh;
      qs[r][d] = ok ? ld(base, i * ld3 + d) : 0.0f;
      dos[r][d] = ok ? ld(dobase, i * D + d) : 0.0f;
    }
    for (int r = threadIdx.x; r < kTile; r += kRows) {
      const bool ok = i0 + r < T;
      ls[r] = ok ? lse[static_cast<int64_t>(bh) * T + i0 + r] : 0.0f;
      dsm[r] = ok ? dsum[static_cast<int64_t>(bh) * T + i0 + r] : 0.0f;
    }
    __syncthreads();
    const int ni = T - i0 < kTile ? T - i0 : kTile;
#pragma unroll 4
    for (int r = 0; r < kTile; ++r) {
      if (r >= ni) break;
      float s = 0.0f, dp = 0.0f;
#pragma unroll
      for (int d = 0; d < DH; ++d) {
        s += qs[r][d] * k[d];
        dp += dos[r][d] * vown[threadIdx.x][d];
      }
      const float p = expf(s * scale - ls[r]);
      const float ds = p * (dp - dsm[r]);
#pragma unroll
      for (int d = 0; d < DH; ++d) {
        dv[d] += p * dos[r][d];
        dk[d] += ds * qs[r][d];
      }
    }
  }
  if (!valid) return;
  Ty* row = dqkv + (static_cast<int64_t>(b) * T + j) * ld3 + static_cast<int64_t>(h) * Dh;
#pragma unroll
  for (int d = 0; d < DH; ++d)
    if (d < Dh) {
      st(row, D + d, dk[d] * scale);
      st(row, 2 * D + d, dv[d]);
    }
}

void check_shape(const char* op, int64_t B, int64_t T, int64_t H, int64_t Dh) {
  if (!flash_attention_supported(Dh))
    throw std::invalid_argument(std::string(op) + ": head_dim " + std::to_string(Dh) +
                                " > 128 is not supported by the flash kernel (use the probabilities path)");
  if (B * H > 65535 || T > (1 << 30))
    throw std::invalid_argument(std::string(op) + ": B*H = " + std::to_string(B * H) + " exceeds 65535");
}

// Runs BODY with constexpr int DH = the head-dim bucket of Dh.
#define VT_FLASH_DISPATCH_DH(Dh, DH, ...) \
  if ((Dh) <= 32) {                       \
    constexpr int DH = 32;                \
    __VA_ARGS__;                          \
  } else if ((Dh) <= 64) {                \
    constexpr int DH = 64;                \
    __VA_ARGS__;                          \
  } else {                                \
    constexpr int DH = 128;               \
    __VA_ARGS__;                          \
  }

template <int DH>
dim3 row_grid(int64_t B, int64_t T, int64_t H) {
  return dim3(static_cast<unsigned>((T + Cfg<DH>::kRows - 1) / Cfg<DH>::kRows), static_cast<unsigned>(B * H));
}

}  // namespace

bool flash_attention_supported(int64_t Dh) { return Dh >= 1 && Dh <= 128; }

void flash_attention_forward(const void* qkv, void* out, float* lse, int64_t B, int64_t T, int64_t H, int64_t Dh,
                             DType io, cudaStream_t stream) {
  const char* op = "cuda::flash_attention_forward";
  if (io != DType::F32 && io != DType::BF16) bad_dtype(op, io);
  if (B == 0 || T == 0 || H == 0) return;
  check_shape(op, B, T, H, Dh);
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  VT_CUDA_DISPATCH_IO(op, io, Ty, VT_FLASH_DISPATCH_DH(Dh, DH, {
    auto kernel = flash_fwd_kernel<Ty, DH>;  // (an alias: the emulator's launch rewrite wants one name)
    kernel<<<row_grid<DH>(B, T, H), Cfg<DH>::kRows, 0, stream>>>(
        static_cast<const Ty*>(qkv), static_cast<Ty*>(out), lse, static_cast<int>(T), static_cast<int>(H),
        static_cast<int>(Dh), scale);
  }));
  check_launch(op);
}

void flash_attention_backward(const void* qkv, const void* out, const float* lse, const void* dout, void* dqkv,
                              int64_t B, int64_t T, int64_t H, int64_t Dh, DType io, cudaStream_t stream) {
  const char* op = "cuda::flash_attention_backward";
  if (io != DType::F32 && io != DType::BF16) bad_dtype(op, io);
  if (B == 0 || T == 0 || H == 0) return;
  check_shape(op, B, T, H, Dh);
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
  const int64_t rows = B * H * T;
  Workspace dsum(static_cast<size_t>(rows) * sizeof(float), stream);
  const int Ti = static_cast<int>(T), Hi = static_cast<int>(H), Di = static_cast<int>(Dh);
  VT_CUDA_DISPATCH_IO(op, io, Ty, {
    auto dot = flash_bwd_dot_kernel<Ty>;
    dot<<<static_cast<unsigned>((rows + 255) / 256), 256, 0, stream>>>(
        static_cast<const Ty*>(out), static_cast<const Ty*>(dout), dsum.f32(), rows, Ti, Hi, Di);
    VT_FLASH_DISPATCH_DH(Dh, DH, {
      auto dq = flash_bwd_dq_kernel<Ty, DH>;
      auto dkdv = flash_bwd_dkdv_kernel<Ty, DH>;
      dq<<<row_grid<DH>(B, T, H), Cfg<DH>::kRows, 0, stream>>>(
          static_cast<const Ty*>(qkv), static_cast<const Ty*>(dout), lse, dsum.f32(), static_cast<Ty*>(dqkv), Ti,
          Hi, Di, scale);
      dkdv<<<row_grid<DH>(B, T, H), Cfg<DH>::kRows, 0, stream>>>(
          static_cast<const Ty*>(qkv), static_cast<const Ty*>(dout), lse, dsum.f32(), static_cast<Ty*>(dqkv), Ti,
          Hi, Di, scale);
    });
  });
  check_launch(op);
}

bool sdpa_uses_cudnn(int64_t B, int64_t T, int64_t H, int64_t Dh, DType io) {
#ifdef VT_CUDNN_SDPA
  return io == DType::BF16 && cudnn_sdpa_supported(B, T, H, Dh);
#else
  (void)B, (void)T, (void)H, (void)Dh, (void)io;
  return false;
#endif
}

void sdpa_forward(const void* qkv, void* out, float* lse, int64_t B, int64_t T, int64_t H, int64_t Dh, DType io,
                  cudaStream_t stream) {
#ifdef VT_CUDNN_SDPA
  if (lse && sdpa_uses_cudnn(B, T, H, Dh, io)) return cudnn_sdpa_forward(qkv, out, lse, B, T, H, Dh, stream);
#endif
  flash_attention_forward(qkv, out, lse, B, T, H, Dh, io, stream);
}

void sdpa_backward(const void* qkv, const void* out, const float* lse, const void* dout, void* dqkv, int64_t B,
                   int64_t T, int64_t H, int64_t Dh, DType io, cudaStream_t stream) {
#ifdef VT_CUDNN_SDPA
  if (sdpa_uses_cudnn(B, T, H, Dh, io)) return cudnn_sdpa_backward(qkv, out, lse, dout, dqkv, B, T, H, Dh, stream);
#endif
  flash_attention_backward(qkv, out, lse, dout, dqkv, B, T, H, Dh, io, stream);
}

}  // namespace cuda
}  // namespace vt
