#include "kernels/cuda/conv.h"

#include <string>

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// One group's GEMM: M = O/G output channels, K = C/G * KH * KW, P = N*OH*OW.
struct ConvGemm {
  int64_t P;
  int K, o_g, c_g;
  int h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
  bool relu;
  int64_t xs0, xs1, xs2, ys0, ys1, ys2;
};

// Block tile BM output channels x BN pixels, K in steps of BK; each thread
// owns TM x TN outputs spaced BM/TM and BN/TN apart (conflict-free shared
// reads, coalesced stores along the pixels). The threads gather the x tile
// one fixed pixel column each, so the pixel's (n, i, j) is decoded once.
template <int BM_, int BN_, int BK_, int TM_, int TN_>
struct Tile {
  static constexpr int BM = BM_, BN = BN_, BK = BK_, TM = TM_, TN = TN_;
  static constexpr int kThreads = (BM / TM) * (BN / TN);
};
using SmallTile = Tile<16, 64, 16, 4, 4>;  // 64 threads
using LargeTile = Tile<64, 64, 16, 4, 4>;  // 256 threads

template <class T>
__global__ void conv_igemm_kernel(ConvGemm a, const float* __restrict__ x, const float* __restrict__ w,
                                  const float* __restrict__ bias, float* __restrict__ y) {
  constexpr int BM = T::BM, BN = T::BN, BK = T::BK, TM = T::TM, TN = T::TN, kThreads = T::kThreads;
  constexpr int kTx = BN / TN, kTy = BM / TM;
  static_assert(kThreads % BN == 0, "each thread gathers one pixel column");
  __shared__ float As[BK][BM];
  __shared__ float Bs[BK][BN];
  const int tid = threadIdx.x;
  const int64_t g = blockIdx.z;
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * BM;
  const int64_t p0 = static_cast<int64_t>(blockIdx.x) * BN;
  const float* wg = w + g * a.o_g * static_cast<int64_t>(a.K);

  const int pl = tid % BN;
  const int64_t p = p0 + pl;
  const bool pvalid = p < a.P;
  int ih0 = 0, iw0 = 0;
  const float* xn = x + g * a.c_g * a.xs1;
  if (pvalid) {
    const int64_t t = p / a.ow;
    const int j = static_cast<int>(p - t * a.ow), i = static_cast<int>(t % a.oh);
    ih0 = i * a.sh - a.ph, iw0 = j * a.sw - a.pw;
    xn += (t / a.oh) * a.xs0;
  }
  const int taps = a.kh * a.kw;
  const int ty = tid / kTx, tx = tid % kTx;
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  for (int k0 = 0; k0 < a.K; k0 += BK) {
    for (int e = tid; e < BM * BK; e += kThreads) {
      const int ml = e / BK, kl = e % BK;
      const int64_t m = m0 + ml;
      const int k = k0 + kl;
      As[kl][ml] = (m < a.o_g && k < a.K) ? wg[m * a.K + k] : 0.f;
    }
    for (int kl = tid / BN; kl < BK; kl += kThreads / BN) {
      const int k = k0 + kl;
      float v = 0.f;
      if (pvalid && k < a.K) {
        if (taps == 1) {  // 1x1 (most Inception units): k is the channel, no divisions
          if (ih0 >= 0 && ih0 < a.h && iw0 >= 0 && iw0 < a.w) v = xn[k * a.xs1 + ih0 * a.xs2 + iw0];
        } else {
          const int c = k / taps, r = k - c * taps, ka = r / a.kw, kb = r - ka * a.kw;
          const int ih = ih0 + ka * a.dh, iw = iw0 + kb * a.dw;
          if (ih >= 0 && ih < a.h && iw >= 0 && iw < a.w) v = xn[c * a.xs1 + ih * a.xs2 + iw];
        }
      }
      Bs[kl][pl] = v;
    }
    __syncthreads();
#pragma unroll
    for (int kl = 0; kl < BK; ++kl) {
      float av[TM], bv[TN];
#pragma unroll
      for (int i = 0; i < TM; ++i) av[i] = As[kl][ty + i * kTy];
#pragma unroll
      for (int j = 0; j < TN; ++j) bv[j] = Bs[kl][tx + j * kTx];
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += av[i] * bv[j];
    }
    __syncthreads();
  }

#pragma unroll
  for (int j = 0; j < TN; ++j) {
    const int64_t q = p0 + tx + j * kTx;
    if (q >= a.P) continue;
    const int64_t t = q / a.ow, n = t / a.oh;
    const int64_t jj = q - t * a.ow, ii = t - n * a.oh;
    float* yp = y + n * a.ys0 + ii * a.ys2 + jj;
#pragma unroll
    for (int i = 0; i < TM; ++i) {
      const int64_t m = m0 + ty + i * kTy;
      if (m >= a.o_g) continue;
      const int64_t o = g * a.o_g + m;
      float v = acc[i][j] + (bias ? bias[o] : 0.f);
      if (a.relu) v = v > 0.f ? v : 0.f;
      yp[o * a.ys1] = v;
    }
  }
}

template <class T>
void launch(const ConvGemm& a, int groups, const float* x, const float* w, const float* b, float* y,
            cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((a.P + T::BN - 1) / T::BN), static_cast<unsigned>((a.o_g + T::BM - 1) / T::BM),
                  static_cast<unsigned>(groups));
  conv_igemm_kernel<T><<<grid, T::kThreads, 0, stream>>>(a, x, w, b, y);
}

}  // namespace

void conv2d_forward(const Conv2dDesc& d, const float* x, const float* w, const float* b, float* y,
                    cudaStream_t stream) {
  const char* op = "cuda::conv2d_forward";
  const int64_t P = d.n * d.oh * d.ow;
  if (P == 0 || d.o == 0) return;
  ConvGemm a{};
  a.P = P;
  a.c_g = static_cast<int>(d.c / d.groups), a.o_g = static_cast<int>(d.o / d.groups);
  a.K = static_cast<int>(a.c_g * d.kh * d.kw);
  a.h = static_cast<int>(d.h), a.w = static_cast<int>(d.w), a.oh = static_cast<int>(d.oh), a.ow = static_cast<int>(d.ow);
  a.kh = static_cast<int>(d.kh), a.kw = static_cast<int>(d.kw);
  a.sh = d.sh, a.sw = d.sw, a.ph = d.ph, a.pw = d.pw, a.dh = d.dh, a.dw = d.dw, a.relu = d.relu;
  a.xs0 = d.x_strides[0], a.xs1 = d.x_strides[1], a.xs2 = d.x_strides[2];
  a.ys0 = d.y_strides[0], a.ys1 = d.y_strides[1], a.ys2 = d.y_strides[2];
  if (d.groups > 65535 || (a.o_g + 15) / 16 > 65535 || (P + 63) / 64 > 0x7fffffff)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(d.groups) + " groups, " +
                                std::to_string(a.o_g) + " channels per group, " + std::to_string(P) +
                                " output pixels exceed the launch grid");
  // Few output channels per group (grouped convs, narrow test networks):
  // a 16-channel tile wastes less than the 64-channel one.
  if (a.o_g <= 16) launch<SmallTile>(a, d.groups, x, w, b, y, stream);
  else launch<LargeTile>(a, d.groups, x, w, b, y, stream);
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
