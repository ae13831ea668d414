#include "kernels/cpu/embedding.h"

#include <cmath>
#include <cstring>

namespace vt {
namespace cpu {

void embedding_forward(const float* table, const int32_t* ids, float* out, int64_t B, int64_t D) {
#pragma omp parallel for
  for (int64_t b = 0; b < B; ++b)
    std::memcpy(out + b * D, table + static_cast<int64_t>(ids[b]) * D, static_cast<size_t>(D) * sizeof(float));
}

// Serial over the batch so duplicate ids add in batch order (deterministic);
// the work is B*D additions, far below a threading threshold for label tables.
void embedding_backward(const float* dout, const int32_t* ids, float* dtable, int64_t B, int64_t D) {
  for (int64_t b = 0; b < B; ++b) {
    float* dst = dtable + static_cast<int64_t>(ids[b]) * D;
    const float* g = dout + b * D;
#pragma omp simd
    for (int64_t d = 0; d < D; ++d) dst[d] += g[d];
  }
}

// DiT computes this in float32: freqs = exp(-ln(P) * arange(half) / half)
// and args = t * freqs are rounded to float32 before cos/sin. We round at the
// same points (evaluating each function in double, then rounding) so that
// the table matches DiT's to float precision even at t ~ 1000, where a
// double-precision argument would differ by up to ~6e-5.
void timestep_embedding(const float* t, float* out, int64_t B, int64_t dim, double max_period) {
  const int64_t half = dim / 2;
  const float neg_log = static_cast<float>(-std::log(max_period));
  for (int64_t b = 0; b < B; ++b) {
    float* o = out + b * dim;
    for (int64_t k = 0; k < half; ++k) {
      const float e = (neg_log * static_cast<float>(k)) / static_cast<float>(half);
      const float freq = static_cast<float>(std::exp(static_cast<double>(e)));
      const float arg = t[b] * freq;
      o[k] = static_cast<float>(std::cos(static_cast<double>(arg)));
      o[half + k] = static_cast<float>(std::sin(static_cast<double>(arg)));
    }
    if (dim % 2) o[dim - 1] = 0.0f;
  }
}

// MAE/DiT get_2d_sincos_pos_embed (numpy, float64): emb_h from grid[0] (the
// column index, meshgrid(grid_w, grid_h)) fills the first half, emb_w from
// grid[1] (the row index) the second; each 1-D part is [sin, cos].
void sincos_pos_embed_2d(float* out, int64_t grid_h, int64_t grid_w, int64_t D) {
  const int64_t quarter = D / 4;
  for (int64_t i = 0; i < grid_h; ++i)
    for (int64_t j = 0; j < grid_w; ++j) {
      float* o = out + (i * grid_w + j) * D;
      for (int64_t k = 0; k < quarter; ++k) {
        const double omega = 1.0 / std::pow(10000.0, static_cast<double>(k) / static_cast<double>(quarter));
        const double col = static_cast<double>(j) * omega, row = static_cast<double>(i) * omega;
        o[k] = static_cast<float>(std::sin(col));
        o[quarter + k] = static_cast<float>(std::cos(col));
        o[2 * quarter + k] = static_cast<float>(std::sin(row));
        o[3 * quarter + k] = static_cast<float>(std::cos(row));
      }
    }
}

}  // namespace cpu
}  // namespace vt
