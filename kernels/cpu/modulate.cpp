#include "kernels/cpu/modulate.h"

#include <algorithm>

namespace vt {
namespace cpu {
namespace {

// Column block for the token reductions: (batch, block) pairs give enough
// parallel work when B is smaller than the thread count, and a block's
// partial sums stay in L1.
constexpr int64_t kBlock = 256;

}  // namespace

void modulate_forward(const float* x, const float* shift, int64_t ld_shift, const float* scale,
                      int64_t ld_scale, float* out, int64_t B, int64_t T, int64_t D) {
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const float* sh = shift + b * ld_shift;
      const float* sc = scale + b * ld_scale;
      const float* xr = x + (b * T + t) * D;
      float* o = out + (b * T + t) * D;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) o[d] = xr[d] * (1.0f + sc[d]) + sh[d];
    }
}

void modulate_backward(const float* dout, const float* x, const float* scale, int64_t ld_scale, float* dx,
                       float* dshift, int64_t ld_dshift, float* dscale, int64_t ld_dscale, int64_t B,
                       int64_t T, int64_t D) {
  const int64_t nblk = (D + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t blk = 0; blk < nblk; ++blk) {
      const int64_t d0 = blk * kBlock, d1 = std::min(D, d0 + kBlock);
      const float* sc = scale + b * ld_scale;
      float* dsh = dshift ? dshift + b * ld_dshift : nullptr;
      float* dsc = dscale ? dscale + b * ld_dscale : nullptr;
      if (dsh) std::fill(dsh + d0, dsh + d1, 0.0f);
      if (dsc) std::fill(dsc + d0, dsc + d1, 0.0f);
      for (int64_t t = 0; t < T; ++t) {
        const float* g = dout + (b * T + t) * D;
        const float* xr = x + (b * T + t) * D;
        if (dx) {
          float* o = dx + (b * T + t) * D;
#pragma omp simd
          for (int64_t d = d0; d < d1; ++d) o[d] = g[d] * (1.0f + sc[d]);
        }
        if (dsh) {
#pragma omp simd
          for (int64_t d = d0; d < d1; ++d) dsh[d] += g[d];
        }
        if (dsc) {
#pragma omp simd
          for (int64_t d = d0; d < d1; ++d) dsc[d] += g[d] * xr[d];
        }
      }
    }
}

void gate_forward(const float* x, const float* gate, int64_t ld_gate, float* out, int64_t B, int64_t T,
                  int64_t D) {
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const float* gt = gate + b * ld_gate;
      const float* xr = x + (b * T + t) * D;
      float* o = out + (b * T + t) * D;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) o[d] = gt[d] * xr[d];
    }
}

void gate_backward(const float* dout, const float* x, const float* gate, int64_t ld_gate, float* dx,
                   float* dgate, int64_t ld_dgate, int64_t B, int64_t T, int64_t D) {
  const int64_t nblk = (D + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t blk = 0; blk < nblk; ++blk) {
      const int64_t d0 = blk * kBlock, d1 = std::min(D, d0 + kBlock);
      const float* gt = gate + b * ld_gate;
      float* dg = dgate ? dgate + b * ld_dgate : nullptr;
      if (dg) std::fill(dg + d0, dg + d1, 0.0f);
      for (int64_t t = 0; t < T; ++t) {
        const float* g = dout + (b * T + t) * D;
        const float* xr = x + (b * T + t) * D;
        if (dx) {
          float* o = dx + (b * T + t) * D;
#pragma omp simd
          for (int64_t d = d0; d < d1; ++d) o[d] = g[d] * gt[d];
        }
        if (dg) {
#pragma omp simd
          for (int64_t d = d0; d < d1; ++d) dg[d] += g[d] * xr[d];
        }
      }
    }
}

void gate_residual_add(const float* x, const float* gate, int64_t ld_gate, float alpha, float* residual,
                       int64_t B, int64_t T, int64_t D) {
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const float* gt = gate + b * ld_gate;
      const float* xr = x + (b * T + t) * D;
      float* r = residual + (b * T + t) * D;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) r[d] += alpha * gt[d] * xr[d];
    }
}

}  // namespace cpu
}  // namespace vt
