#include "kernels/cpu/patch.h"

#include <cstring>

namespace vt {
namespace cpu {

// Each (b, patch row i) copies p*p runs of p contiguous floats per channel;
// parallel over (b, i) so threads write disjoint token ranges.
void patchify(const float* image, float* patches, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p) {
  const int64_t h = H / p, w = W / p, F = C * p * p;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        float* dst = patches + (b * h * w + i * w + j) * F;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t a = 0; a < p; ++a)
            std::memcpy(dst + (c * p + a) * p, image + ((b * C + c) * H + i * p + a) * W + j * p,
                        static_cast<size_t>(p) * sizeof(float));
      }
}

void patchify_backward(const float* dpatches, float* dimage, int64_t B, int64_t C, int64_t H, int64_t W,
                       int64_t p) {
  const int64_t h = H / p, w = W / p, F = C * p * p;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        const float* src = dpatches + (b * h * w + i * w + j) * F;
        for (int64_t c = 0; c < C; ++c)
          for (int64_t a = 0; a < p; ++a)
            std::memcpy(dimage + ((b * C + c) * H + i * p + a) * W + j * p, src + (c * p + a) * p,
                        static_cast<size_t>(p) * sizeof(float));
      }
}

// Pixel (c, y, x) with y = i p + a, x = j p + bb reads token i w + j,
// feature (a p + bb) C + c: a gather with stride C along each output row.
void unpatchify(const float* tokens, float* image, int64_t B, int64_t C, int64_t H, int64_t W, int64_t p) {
  const int64_t w = W / p, F = p * p * C;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t y = 0; y < H; ++y) {
      const int64_t i = y / p, a = y % p;
      for (int64_t c = 0; c < C; ++c) {
        float* row = image + ((b * C + c) * H + y) * W;
        const float* src = tokens + (b * (H / p) * w + i * w) * F + a * p * C + c;
        for (int64_t j = 0; j < w; ++j)
          for (int64_t bb = 0; bb < p; ++bb) row[j * p + bb] = src[j * F + bb * C];
      }
    }
}

void unpatchify_backward(const float* dimage, float* dtokens, int64_t B, int64_t C, int64_t H, int64_t W,
                         int64_t p) {
  const int64_t h = H / p, w = W / p, F = p * p * C;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j) {
        float* dst = dtokens + (b * h * w + i * w + j) * F;
        for (int64_t a = 0; a < p; ++a)
          for (int64_t bb = 0; bb < p; ++bb)
            for (int64_t c = 0; c < C; ++c)
              dst[(a * p + bb) * C + c] = dimage[((b * C + c) * H + i * p + a) * W + j * p + bb];
      }
}

void cls_concat(const float* x, const float* cls, float* out, int64_t B, int64_t N, int64_t D) {
  const size_t row = static_cast<size_t>(D) * sizeof(float);
#pragma omp parallel for
  for (int64_t b = 0; b < B; ++b) {
    float* o = out + b * (N + 1) * D;
    std::memcpy(o, cls, row);
    std::memcpy(o + D, x + b * N * D, row * static_cast<size_t>(N));
  }
}

void cls_concat_backward(const float* dout, float* dx, float* dcls, int64_t B, int64_t N, int64_t D) {
  const size_t row = static_cast<size_t>(D) * sizeof(float);
#pragma omp parallel for
  for (int64_t b = 0; b < B; ++b) std::memcpy(dx + b * N * D, dout + (b * (N + 1) + 1) * D, row * static_cast<size_t>(N));
  // Batch order is fixed so the sum is deterministic.
  for (int64_t b = 0; b < B; ++b) {
    const float* g = dout + b * (N + 1) * D;
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) dcls[d] += g[d];
  }
}

void cls_select(const float* x, float* out, int64_t B, int64_t T, int64_t D) {
  for (int64_t b = 0; b < B; ++b) std::memcpy(out + b * D, x + b * T * D, static_cast<size_t>(D) * sizeof(float));
}

void cls_select_backward(const float* dout, float* dx, int64_t B, int64_t T, int64_t D) {
#pragma omp parallel for
  for (int64_t b = 0; b < B; ++b) {
    float* g = dx + b * T * D;
    std::memcpy(g, dout + b * D, static_cast<size_t>(D) * sizeof(float));
    std::memset(g + D, 0, static_cast<size_t>((T - 1) * D) * sizeof(float));
  }
}

void pos_embed_add(const float* x, const float* pos, float* out, int64_t B, int64_t T, int64_t D) {
  const int64_t n = T * D;
#pragma omp parallel for collapse(2)
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t) {
      const float* xr = x + b * n + t * D;
      const float* pr = pos + t * D;
      float* o = out + b * n + t * D;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) o[d] = xr[d] + pr[d];
    }
}

void pos_embed_add_backward(const float* dout, float* dpos, int64_t B, int64_t T, int64_t D) {
  const int64_t n = T * D;
  // Parallel over positions; each sums the batch in order (deterministic).
#pragma omp parallel for
  for (int64_t t = 0; t < T; ++t) {
    float* dp = dpos + t * D;
    for (int64_t b = 0; b < B; ++b) {
      const float* g = dout + b * n + t * D;
#pragma omp simd
      for (int64_t d = 0; d < D; ++d) dp[d] += g[d];
    }
  }
}

}  // namespace cpu
}  // namespace vt
