#include "kernels/cuda/siamese.h"

#include <initializer_list>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/row_warp.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

// Three row caches (x or y staging, u/s, ds) of d floats in shared memory.
constexpr int64_t kMaxSmemFloats = 12288 - 256;  // 48 KiB minus 1 KiB for block_sum slots

void check_width(const char* op, int64_t d) {
  if (3 * d > kMaxSmemFloats)
    throw std::invalid_argument(std::string(op) + ": row width d=" + std::to_string(d) +
                                " exceeds the CUDA kernel's limit of " + std::to_string(kMaxSmemFloats / 3));
}

template <typename T>
__device__ __forceinline__ const T* row_ptr(const void* p, int64_t offset) {
  return p ? static_cast<const T*>(p) + offset : nullptr;
}

__device__ __forceinline__ float wt(const float* w, int64_t j) { return w ? w[j] : 1.0f; }
__device__ __forceinline__ float bs(const float* b, int64_t j) { return b ? b[j] : 0.0f; }

// Mean and rstd of v[0..d) (each thread reads only its own strided entries);
// every thread of the block must call it.
__device__ __forceinline__ void row_stats(const float* v, int64_t d, float eps, float& mu, float& rs) {
  float s[1] = {0.0f};
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) s[0] += v[j];
  block_sum(s);
  mu = s[0] / static_cast<float>(d);
  float q[1] = {0.0f};
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float c = v[j] - mu;
    q[0] += c * c;
  }
  block_sum(q);
  rs = 1.0f / sqrtf(q[0] / static_cast<float>(d) + eps);
}

// ---------------------------------------------------------------- forward

template <typename T, typename A>
__global__ void input_forward_kernel(SiameseInputArgs a, T* u, A* z, float* mean, float* rstd, bool saved) {
  extern __shared__ float sm[];
  const int64_t d = a.d, rows = a.rows, r = blockIdx.x;
  float* stage = sm;  // x, then y
  float* acc = sm + d;  // u, then s, then the normalised s
  const T* x = row_ptr<T>(a.x, r * d);
  const T* y = row_ptr<T>(a.y, r * d);
  T* ur = u ? u + r * d : nullptr;
  // Every branch below depends on kernel arguments only (block-uniform), so
  // the block reductions inside are reached by all threads.
  if (x) {
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) stage[j] = ld(x, j);
    float mu = 0.0f, rs = 1.0f;
    if (a.post.enabled) {
      if (saved) {
        mu = mean[r], rs = rstd[r];
      } else {
        row_stats(stage, d, a.eps, mu, rs);
        if (threadIdx.x == 0) mean[r] = mu, rstd[r] = rs;
      }
    }
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      float t = stage[j];
      if (a.post.enabled) t = (t - mu) * rs * wt(a.post.weight, j) + bs(a.post.bias, j);
      acc[j] = t;
      if (ur) st(ur, j, t);  // u may alias x: stage[j] was read by this thread
    }
  } else {
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      acc[j] = 0.0f;
      if (ur) st(ur, j, 0.0f);
    }
  }
  if (y) {
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) stage[j] = ld(y, j);
    float mu = 0.0f, rs = 1.0f;
    if (a.pre.enabled) {
      if (saved) {
        mu = mean[rows + r], rs = rstd[rows + r];
      } else {
        row_stats(stage, d, a.eps, mu, rs);
        if (threadIdx.x == 0) mean[rows + r] = mu, rstd[rows + r] = rs;
      }
    }
    for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
      float t = stage[j];
      if (a.pre.enabled) t = (t - mu) * rs * wt(a.pre.weight, j) + bs(a.pre.bias, j);
      acc[j] += t;
    }
  }
  float mu = 0.0f, rs = 1.0f;
  if (a.input.enabled) {
    if (saved) {
      mu = mean[2 * rows + r], rs = rstd[2 * rows + r];
    } else {
      row_stats(acc, d, a.eps, mu, rs);
      if (threadIdx.x == 0) mean[2 * rows + r] = mu, rstd[2 * rows + r] = rs;
    }
  }
  const int64_t b = r / a.rows_per_sample;
  const T* sh = row_ptr<T>(a.shift, b * a.mod_ld);
  const T* sc = row_ptr<T>(a.scale, b * a.mod_ld);
  A* zr = z + r * d;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float t = acc[j];
    if (a.input.enabled) t = (t - mu) * rs * wt(a.input.weight, j) + bs(a.input.bias, j);
    if (sh) t = t * (1.0f + ld(sc, j)) + ld(sh, j);
    st(zr, j, t);
  }
}

// Warp-per-row twin of input_forward_kernel for d <= kWarpRowMaxD
// (row_warp.cuh): x, y and s stay in registers, V-wide loads and stores.

// v = (v - mu) * rs * weight + bias over the lane's columns, if n is enabled.
template <int V>
__device__ __forceinline__ void norm_lane(const LaneRow<V>& L, float (&v)[kLaneElems], const SiameseNormArgs& n,
                                          float mu, float rs) {
  if (!n.enabled) return;
#pragma unroll
  for (int c = 0; c < LaneRow<V>::C; ++c) {
    if (!L.has(c)) continue;
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int64_t j = L.col(c) + k;
      v[c * V + k] = (v[c * V + k] - mu) * rs * wt(n.weight, j) + bs(n.bias, j);
    }
  }
}

// The statistics of norm slot `slot` (0 post, 1 pre, 2 input) of row r:
// read back when saved, else computed from v and written.
template <int V>
__device__ __forceinline__ void slot_stats(const LaneRow<V>& L, const float (&v)[kLaneElems], float eps, bool saved,
                                           float* mean, float* rstd, int64_t i, float& mu, float& rs) {
  if (saved) {
    mu = mean[i], rs = rstd[i];
    return;
  }
  L.mean_rstd(v, eps, mu, rs);
  if (L.lane == 0) mean[i] = mu, rstd[i] = rs;
}

template <typename T, typename A, int V>
__global__ void input_forward_warp_kernel(SiameseInputArgs a, T* u, A* z, float* mean, float* rstd, bool saved) {
  const int64_t d = a.d, rows = a.rows, r = warp_row();
  if (r >= rows) return;  // a whole warp leaves: no shuffle waits on it
  const LaneRow<V> L{d, static_cast<int>(threadIdx.x & 31)};
  const T* x = row_ptr<T>(a.x, r * d);
  const T* y = row_ptr<T>(a.y, r * d);
  T* ur = u ? u + r * d : nullptr;
  float acc[kLaneElems], v[kLaneElems];
  // Branches depend on kernel arguments only: every warp shuffles alike.
  if (x) {
    L.load(x, acc);  // the row is in registers before u (which may alias x) is written
    float mu = 0.0f, rs = 1.0f;
    if (a.post.enabled) slot_stats(L, acc, a.eps, saved, mean, rstd, r, mu, rs);
    norm_lane(L, acc, a.post, mu, rs);
    if (ur) L.store(ur, acc);
  } else {
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i) acc[i] = 0.0f;
    if (ur) L.store(ur, acc);
  }
  if (y) {
    L.load(y, v);
    float mu = 0.0f, rs = 1.0f;
    if (a.pre.enabled) slot_stats(L, v, a.eps, saved, mean, rstd, rows + r, mu, rs);
    norm_lane(L, v, a.pre, mu, rs);
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i) acc[i] += v[i];
  }
  float mu = 0.0f, rs = 1.0f;
  if (a.input.enabled) slot_stats(L, acc, a.eps, saved, mean, rstd, 2 * rows + r, mu, rs);
  norm_lane(L, acc, a.input, mu, rs);
  if (a.shift) {
    const int64_t m = (r / a.rows_per_sample) * a.mod_ld;
    const T* sh = static_cast<const T*>(a.shift) + m;
    const T* sc = static_cast<const T*>(a.scale) + m;
#pragma unroll
    for (int c = 0; c < LaneRow<V>::C; ++c) {
      if (!L.has(c)) continue;
      float fs[V], fc[V];
      ld_vec<V>(sh, L.col(c), fs);
      ld_vec<V>(sc, L.col(c), fc);
#pragma unroll
      for (int k = 0; k < V; ++k) acc[c * V + k] = acc[c * V + k] * (1.0f + fc[k]) + fs[k];
    }
  }
  L.store(z + r * d, acc);
}

// --------------------------------------------------------------- backward

// Activation gradients of one row. red [2, rows] receives the input norm's
// row scalars (mean of g and of g * s_hat) for the parameter pass.
template <typename T>
__global__ void input_backward_rows_kernel(SiameseInputArgs a, const float* __restrict__ mean,
                                           const float* __restrict__ rstd, SiameseInputGradArgs g,
                                           float* red) {
  extern __shared__ float sm[];
  const int64_t d = a.d, rows = a.rows, r = blockIdx.x;
  float* xs = sm;          // x row
  float* ys = sm + d;      // y row
  float* sv = sm + 2 * d;  // s, then ds
  const T* x = row_ptr<T>(a.x, r * d);
  const T* y = row_ptr<T>(a.y, r * d);
  const T* dz = row_ptr<T>(g.dz, r * d);
  const T* du = x ? row_ptr<T>(g.du, r * d) : nullptr;
  const T* dpass = y ? row_ptr<T>(g.dy_pass, r * d) : nullptr;
  const int64_t b = r / a.rows_per_sample;
  const T* sc = a.shift ? row_ptr<T>(a.scale, b * a.mod_ld) : nullptr;
  const float inv_d = 1.0f / static_cast<float>(d);
  float mx = 0.0f, rx = 1.0f, my = 0.0f, ry = 1.0f, ms = 0.0f, rs = 1.0f;
  if (x && a.post.enabled) mx = mean[r], rx = rstd[r];
  if (y && a.pre.enabled) my = mean[rows + r], ry = rstd[rows + r];
  if (a.input.enabled) ms = mean[2 * rows + r], rs = rstd[2 * rows + r];

  // Recompute s; the input norm's sums of g = dn * w_in and g * s_hat.
  float si[2] = {0.0f, 0.0f};
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    float u = 0.0f, v = 0.0f;
    if (x) {
      const float xv = ld(x, j);
      xs[j] = xv;
      u = a.post.enabled ? (xv - mx) * rx * wt(a.post.weight, j) + bs(a.post.bias, j) : xv;
    }
    if (y) {
      const float yv = ld(y, j);
      ys[j] = yv;
      v = a.pre.enabled ? (yv - my) * ry * wt(a.pre.weight, j) + bs(a.pre.bias, j) : yv;
    }
    const float s = u + v;
    sv[j] = s;
    if (a.input.enabled) {
      const float dn = sc ? ld(dz, j) * (1.0f + ld(sc, j)) : ld(dz, j);
      const float gg = dn * wt(a.input.weight, j);
      si[0] += gg;
      si[1] += gg * ((s - ms) * rs);
    }
  }
  float ai = 0.0f, bi = 0.0f;
  if (a.input.enabled) {
    block_sum(si);
    ai = si[0] * inv_d, bi = si[1] * inv_d;
    if (red && threadIdx.x == 0) red[r] = ai, red[rows + r] = bi;
  }
  // ds; the post/pre norms' sums (post: g = (du + ds) w_post, pre: g = ds w_pre).
  float sp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float dn = sc ? ld(dz, j) * (1.0f + ld(sc, j)) : ld(dz, j);
    float ds = dn;
    if (a.input.enabled) ds = rs * (dn * wt(a.input.weight, j) - ai - (sv[j] - ms) * rs * bi);
    sv[j] = ds;
    if (x && a.post.enabled) {
      const float gg = ((du ? ld(du, j) : 0.0f) + ds) * wt(a.post.weight, j);
      sp[0] += gg;
      sp[1] += gg * ((xs[j] - mx) * rx);
    }
    if (y && a.pre.enabled) {
      const float gg = ds * wt(a.pre.weight, j);
      sp[2] += gg;
      sp[3] += gg * ((ys[j] - my) * ry);
    }
  }
  if ((x && a.post.enabled) || (y && a.pre.enabled)) block_sum(sp);
  const float ap = sp[0] * inv_d, bp = sp[1] * inv_d, aq = sp[2] * inv_d, bq = sp[3] * inv_d;
  T* dx = (x && g.dx) ? static_cast<T*>(g.dx) + r * d : nullptr;
  T* dy = (y && g.dy) ? static_cast<T*>(g.dy) + r * d : nullptr;
  for (int64_t j = threadIdx.x; j < d; j += blockDim.x) {
    const float ds = sv[j];
    if (dx) {
      const float dut = (du ? ld(du, j) : 0.0f) + ds;
      if (a.post.enabled) {
        const float gg = dut * wt(a.post.weight, j);
        st(dx, j, rx * (gg - ap - (xs[j] - mx) * rx * bp));
      } else {
        st(dx, j, dut);
      }
    }
    if (dy) {
      // dy may alias dy_pass: this thread reads element j before writing it.
      const float pass = dpass ? ld(dpass, j) : 0.0f;
      if (a.pre.enabled) {
        const float gg = ds * wt(a.pre.weight, j);
        st(dy, j, pass + ry * (gg - aq - (ys[j] - my) * ry * bq));
      } else {
        st(dy, j, pass + ds);
      }
    }
  }
}

// Warp-per-row twin of input_backward_rows_kernel for d <= kWarpRowMaxD:
// x, y and s (then ds) stay in registers; dz, scale and du are re-read per
// pass (L1/L2 hits), as the block kernel re-reads them.
template <typename T, int V>
__global__ void input_backward_rows_warp_kernel(SiameseInputArgs a, const float* __restrict__ mean,
                                                const float* __restrict__ rstd, SiameseInputGradArgs g,
                                                float* red) {
  const int64_t d = a.d, rows = a.rows, r = warp_row();
  if (r >= rows) return;  // a whole warp leaves: no shuffle waits on it
  const LaneRow<V> L{d, static_cast<int>(threadIdx.x & 31)};
  constexpr int C = LaneRow<V>::C;
  const T* x = row_ptr<T>(a.x, r * d);
  const T* y = row_ptr<T>(a.y, r * d);
  const T* dz = row_ptr<T>(g.dz, r * d);
  const T* du = x ? row_ptr<T>(g.du, r * d) : nullptr;
  const T* dpass = y ? row_ptr<T>(g.dy_pass, r * d) : nullptr;
  const T* sc = a.shift ? row_ptr<T>(a.scale, (r / a.rows_per_sample) * a.mod_ld) : nullptr;
  const float inv_d = 1.0f / static_cast<float>(d);
  float mx = 0.0f, rx = 1.0f, my = 0.0f, ry = 1.0f, ms = 0.0f, rs = 1.0f;
  if (x && a.post.enabled) mx = mean[r], rx = rstd[r];
  if (y && a.pre.enabled) my = mean[rows + r], ry = rstd[rows + r];
  if (a.input.enabled) ms = mean[2 * rows + r], rs = rstd[2 * rows + r];
  float xs[kLaneElems], ys[kLaneElems], sv[kLaneElems];
  if (x) L.load(x, xs);
  if (y) L.load(y, ys);
  // dn = dz * (1 + scale) of chunk c.
  auto load_dn = [&](int c, float* dn) {
    ld_vec<V>(dz, L.col(c), dn);
    if (sc) {
      float t[V];
      ld_vec<V>(sc, L.col(c), t);
#pragma unroll
      for (int k = 0; k < V; ++k) dn[k] *= 1.0f + t[k];
    }
  };

  // Recompute s; the input norm's sums of g = dn * w_in and g * s_hat.
  float si0 = 0.0f, si1 = 0.0f;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    if (!L.has(c)) continue;
    float dn[V];
    load_dn(c, dn);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = c * V + k;
      const int64_t j = L.col(c) + k;
      float u = 0.0f, v = 0.0f;
      if (x) u = a.post.enabled ? (xs[i] - mx) * rx * wt(a.post.weight, j) + bs(a.post.bias, j) : xs[i];
      if (y) v = a.pre.enabled ? (ys[i] - my) * ry * wt(a.pre.weight, j) + bs(a.pre.bias, j) : ys[i];
      sv[i] = u + v;
      if (a.input.enabled) {
        const float gg = dn[k] * wt(a.input.weight, j);
        si0 += gg;
        si1 += gg * ((sv[i] - ms) * rs);
      }
    }
  }
  float ai = 0.0f, bi = 0.0f;
  if (a.input.enabled) {
    ai = warp_sum(si0) * inv_d, bi = warp_sum(si1) * inv_d;
    if (red && L.lane == 0) red[r] = ai, red[rows + r] = bi;
  }
  // ds; the post/pre norms' sums (post: g = (du + ds) w_post, pre: g = ds w_pre).
  float sp[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int c = 0; c < C; ++c) {
    if (!L.has(c)) continue;
    float dn[V], dup[V];
    load_dn(c, dn);
    if (du) ld_vec<V>(du, L.col(c), dup);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const int i = c * V + k;
      const int64_t j = L.col(c) + k;
      float ds = dn[k];
      if (a.input.enabled) ds = rs * (dn[k] * wt(a.input.weight, j) - ai - (sv[i] - ms) * rs * bi);
      sv[i] = ds;
      if (x && a.post.enabled) {
        const float gg = ((du ? dup[k] : 0.0f) + ds) * wt(a.post.weight, j);
        sp[0] += gg;
        sp[1] += gg * ((xs[i] - mx) * rx);
      }
      if (y && a.pre.enabled) {
        const float gg = ds * wt(a.pre.weight, j);
        sp[2] += gg;
        sp[3] += gg * ((ys[i] - my) * ry);
      }
    }
  }
  if ((x && a.post.enabled) || (y && a.pre.enabled)) {
#pragma unroll
    for (int q = 0; q < 4; ++q) sp[q] = warp_sum(sp[q]);
  }
  const float ap = sp[0] * inv_d, bp = sp[1] * inv_d, aq = sp[2] * inv_d, bq = sp[3] * inv_d;
  T* dx = (x && g.dx) ? static_cast<T*>(g.dx) + r * d : nullptr;
  T* dy = (y && g.dy) ? static_cast<T*>(g.dy) + r * d : nullptr;
#pragma unroll
  for (int c = 0; c < C; ++c) {
    if (!L.has(c)) continue;
    if (dx) {
      float dup[V], o[V];
      if (du) ld_vec<V>(du, L.col(c), dup);
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int i = c * V + k;
        const float dut = (du ? dup[k] : 0.0f) + sv[i];
        o[k] = a.post.enabled ? rx * (dut * wt(a.post.weight, L.col(c) + k) - ap - (xs[i] - mx) * rx * bp) : dut;
      }
      st_vec<V>(dx, L.col(c), o);
    }
    if (dy) {
      // dy may alias dy_pass: this lane reads the chunk before writing it.
      float o[V];
      if (dpass) {
        ld_vec<V>(dpass, L.col(c), o);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) o[k] = 0.0f;
      }
#pragma unroll
      for (int k = 0; k < V; ++k) {
        const int i = c * V + k;
        o[k] += a.pre.enabled ? ry * (sv[i] * wt(a.pre.weight, L.col(c) + k) - aq - (ys[i] - my) * ry * bq) : sv[i];
      }
      st_vec<V>(dy, L.col(c), o);
    }
  }
}

// The elementwise quantities of row r, column j that the parameter and
// modulation gradients sum (recomputed from the saved statistics).
struct Elem {
  float xh = 0, yh = 0, sh = 0, dn = 0, ds = 0, dut = 0, nval = 0, dz = 0;
};

template <typename T>
__device__ __forceinline__ Elem elem(const SiameseInputArgs& a, const float* mean, const float* rstd,
                                     const SiameseInputGradArgs& g, const float* red, int64_t r, int64_t j) {
  const int64_t d = a.d, rows = a.rows, i = r * d + j;
  Elem e;
  float u = 0.0f, v = 0.0f;
  if (a.x) {
    const float xv = ld(static_cast<const T*>(a.x), i);
    if (a.post.enabled) {
      e.xh = (xv - mean[r]) * rstd[r];
      u = e.xh * wt(a.post.weight, j) + bs(a.post.bias, j);
    } else {
      u = xv;
    }
  }
  if (a.y) {
    const float yv = ld(static_cast<const T*>(a.y), i);
    if (a.pre.enabled) {
      e.yh = (yv - mean[rows + r]) * rstd[rows + r];
      v = e.yh * wt(a.pre.weight, j) + bs(a.pre.bias, j);
    } else {
      v = yv;
    }
  }
  const float s = u + v;
  e.dz = ld(static_cast<const T*>(g.dz), i);
  e.dn = a.shift ? e.dz * (1.0f + ld(static_cast<const T*>(a.scale), (r / a.rows_per_sample) * a.mod_ld + j))
                 : e.dz;
  if (a.input.enabled) {
    const float rs = rstd[2 * rows + r];
    e.sh = (s - mean[2 * rows + r]) * rs;
    e.nval = e.sh * wt(a.input.weight, j) + bs(a.input.bias, j);
    e.ds = rs * (e.dn * wt(a.input.weight, j) - red[r] - e.sh * red[rows + r]);
  } else {
    e.nval = s;
    e.ds = e.dn;
  }
  e.dut = ((a.x && g.du) ? ld(static_cast<const T*>(g.du), i) : 0.0f) + e.ds;
  return e;
}

// partial [chunks][6][d]: post_dw, post_db, pre_dw, pre_db, in_dw, in_db.
template <typename T>
__global__ void input_param_partials_kernel(SiameseInputArgs a, const float* __restrict__ mean,
                                            const float* __restrict__ rstd, SiameseInputGradArgs g,
                                            const float* __restrict__ red, float* __restrict__ partial) {
  const int64_t d = a.d;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= d) return;
  const int64_t c = blockIdx.y;
  const int64_t r0 = c * kRowsPerChunk, r1 = min(a.rows, r0 + kRowsPerChunk);
  float p[6] = {0, 0, 0, 0, 0, 0};
  for (int64_t r = r0; r < r1; ++r) {
    const Elem e = elem<T>(a, mean, rstd, g, red, r, j);
    p[0] += e.dut * e.xh;
    p[1] += e.dut;
    p[2] += e.ds * e.yh;
    p[3] += e.ds;
    p[4] += e.dn * e.sh;
    p[5] += e.dn;
  }
#pragma unroll
  for (int q = 0; q < 6; ++q) partial[(c * 6 + q) * d + j] = p[q];
}

// dshift[b] = sum over the sample's rows of dz, dscale[b] = of dz * n.
template <typename T>
__global__ void input_mod_grads_kernel(SiameseInputArgs a, const float* __restrict__ mean,
                                       const float* __restrict__ rstd, SiameseInputGradArgs g,
                                       const float* __restrict__ red) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= a.d) return;
  const int64_t b = blockIdx.y;
  float msh = 0.0f, msc = 0.0f;
  for (int64_t r = b * a.rows_per_sample; r < (b + 1) * a.rows_per_sample; ++r) {
    const Elem e = elem<T>(a, mean, rstd, g, red, r, j);
    msh += e.dz;
    msc += e.dz * e.nval;
  }
  if (g.dshift) st(static_cast<T*>(g.dshift), b * a.mod_ld + j, msh);
  if (g.dscale) st(static_cast<T*>(g.dscale), b * a.mod_ld + j, msc);
}

// --------------------------------------------------------------- residual

// The residual maps move V elements per access: V = vec_width<T>() when d,
// gate_ld and every pointer allow it (residual_vec_ok), else 1. A vector
// never crosses a row, so it shares one sample's gate row.
template <typename T, typename A, int V>
__global__ void residual_forward_kernel(SiameseResidualArgs a, T* x_out, T* y_out) {
  const int64_t nv = a.rows * a.d / V;
  const T* u = static_cast<const T*>(a.u);
  const A* f = static_cast<const A*>(a.f);
  const T* y = static_cast<const T*>(a.y);
  const T* gate = static_cast<const T*>(a.gate);
  VT_GRID_STRIDE(vi, nv) {
    const int64_t i = vi * V, r = i / a.d, j = i - r * a.d, b = r / a.rows_per_sample;
    const float ds = a.drop_scale ? a.drop_scale[b] : 1.0f;
    float o[V], g[V], t[V];
    ld_vec<V>(f, i, o);
    if (gate) ld_vec<V>(gate, b * a.gate_ld + j, g);
#pragma unroll
    for (int k = 0; k < V; ++k) o[k] *= ds * (gate ? g[k] : 1.0f);
    if (u) {
      ld_vec<V>(u, i, t);
#pragma unroll
      for (int k = 0; k < V; ++k) t[k] += o[k] * a.inv_c;
      st_vec<V>(x_out, i, t);
    }
    if (y) {
      ld_vec<V>(y, i, t);
#pragma unroll
      for (int k = 0; k < V; ++k) t[k] += o[k];
      st_vec<V>(y_out, i, t);
    }
  }
}

template <typename T, typename A, int V>
__global__ void residual_backward_kernel(SiameseResidualArgs a, const T* dx_out, const T* dy_out, A* df) {
  const int64_t nv = a.rows * a.d / V;
  const T* gate = static_cast<const T*>(a.gate);
  VT_GRID_STRIDE(vi, nv) {
    const int64_t i = vi * V, r = i / a.d, j = i - r * a.d, b = r / a.rows_per_sample;
    const float ds = a.drop_scale ? a.drop_scale[b] : 1.0f;
    float dout[V], t[V], g[V];
#pragma unroll
    for (int k = 0; k < V; ++k) dout[k] = 0.0f;
    if (dx_out) {
      ld_vec<V>(dx_out, i, t);
#pragma unroll
      for (int k = 0; k < V; ++k) dout[k] = t[k] * a.inv_c;
    }
    if (dy_out) {
      ld_vec<V>(dy_out, i, t);
#pragma unroll
      for (int k = 0; k < V; ++k) dout[k] += t[k];
    }
    if (gate) ld_vec<V>(gate, b * a.gate_ld + j, g);
#pragma unroll
    for (int k = 0; k < V; ++k) dout[k] *= ds * (gate ? g[k] : 1.0f);
    st_vec<V>(df, i, dout);
  }
}

template <typename T, typename A>
__global__ void residual_dgate_kernel(SiameseResidualArgs a, const T* dx_out, const T* dy_out, T* dgate) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= a.d) return;
  const int64_t b = blockIdx.y;
  const A* f = static_cast<const A*>(a.f);
  float acc = 0.0f;
  for (int64_t r = b * a.rows_per_sample; r < (b + 1) * a.rows_per_sample; ++r) {
    const int64_t i = r * a.d + j;
    const float dout = (dx_out ? ld(dx_out, i) * a.inv_c : 0.0f) + (dy_out ? ld(dy_out, i) : 0.0f);
    acc += ld(f, i) * dout;
  }
  st(dgate, b * a.gate_ld + j, (a.drop_scale ? a.drop_scale[b] : 1.0f) * acc);
}

int64_t samples_of(const char* op, int64_t rows, int64_t rows_per_sample) {
  if (rows_per_sample <= 0 || rows % rows_per_sample != 0)
    throw std::invalid_argument(std::string(op) + ": rows_per_sample " + std::to_string(rows_per_sample) +
                                " does not divide rows " + std::to_string(rows));
  const int64_t samples = rows / rows_per_sample;
  if (samples > 65535) throw std::invalid_argument(std::string(op) + ": too many samples " + std::to_string(samples));
  return samples;
}

// 128-bit access for the streams (T) and activations (A) of a launch: the
// width divides d and every given pointer is aligned to V of its elements.
template <typename T, typename A>
bool vec_ok(int64_t d, std::initializer_list<const void*> t_ptrs, std::initializer_list<const void*> a_ptrs) {
  constexpr int V = vec_width<T>();
  if (d % V != 0) return false;
  for (const void* p : t_ptrs)
    if (!aligned_to(p, sizeof(T) * V)) return false;
  for (const void* p : a_ptrs)
    if (!aligned_to(p, sizeof(A) * V)) return false;
  return true;
}

template <typename T, typename A>
bool input_vec_ok(const SiameseInputArgs& a, const void* u, const void* z) {
  if (a.shift && a.mod_ld % vec_width<T>() != 0) return false;
  return vec_ok<T, A>(a.d, {a.x, a.y, u, a.shift, a.scale}, {z});
}

template <typename T>
bool input_bwd_vec_ok(const SiameseInputArgs& a, const SiameseInputGradArgs& g) {
  if (a.shift && a.mod_ld % vec_width<T>() != 0) return false;
  return vec_ok<T, T>(a.d, {a.x, a.y, a.shift ? a.scale : nullptr, g.dz, g.du, g.dy_pass, g.dx, g.dy}, {});
}

template <typename T, typename A>
bool residual_vec_ok(const SiameseResidualArgs& a, std::initializer_list<const void*> t_ptrs, const void* f) {
  if (a.gate && a.gate_ld % vec_width<T>() != 0) return false;
  std::initializer_list<const void*> mine = {a.u, a.y, a.gate};
  for (const void* p : mine)
    if (!aligned_to(p, sizeof(T) * vec_width<T>())) return false;
  return vec_ok<T, A>(a.d, t_ptrs, {f});
}

unsigned col_blocks(int64_t d) { return static_cast<unsigned>((d + kColThreads - 1) / kColThreads); }

// The kernels templated on the stream dtype T (args.io) and the activation
// dtype A (args.act); the launch goes through a one-name alias (`k`), which
// the emulator's launch rewrite needs.
#define VT_SIAMESE_DISPATCH(op, args, ...) \
  VT_CUDA_DISPATCH_IO(op, (args).io, T, VT_CUDA_DISPATCH_IO(op, (args).act, A, __VA_ARGS__))

}  // namespace

void siamese_input_forward(const SiameseInputArgs& a, void* u, void* z, float* mean, float* rstd,
                           bool use_saved_stats, cudaStream_t stream) {
  const char* op = "cuda::siamese_input_forward";
  if (a.rows == 0 || a.d == 0) return;
  check_width(op, a.d);
  if (a.shift) samples_of(op, a.rows, a.rows_per_sample);
  if (a.d <= kWarpRowMaxD) {
    VT_SIAMESE_DISPATCH(op, a, VT_ROW_VEC_DISPATCH((input_vec_ok<T, A>(a, u, z)), T, V,
                                                   auto k = input_forward_warp_kernel<T, A, V>;
                                                   k<<<warp_row_blocks(a.rows), 32 * kWarpRows, 0, stream>>>(
                                                       a, static_cast<T*>(u), static_cast<A*>(z), mean, rstd,
                                                       use_saved_stats)));
    check_launch(op);
    return;
  }
  const size_t smem = static_cast<size_t>(2 * a.d) * sizeof(float);
  VT_SIAMESE_DISPATCH(op, a, auto k = input_forward_kernel<T, A>;
                      k<<<static_cast<unsigned>(a.rows), row_threads(a.d), smem, stream>>>(
                          a, static_cast<T*>(u), static_cast<A*>(z), mean, rstd, use_saved_stats));
  check_launch(op);
}

void siamese_input_backward(const SiameseInputArgs& a, const float* mean, const float* rstd,
                            const SiameseInputGradArgs& g, cudaStream_t stream) {
  const char* op = "cuda::siamese_input_backward";
  if (a.rows == 0 || a.d == 0) return;
  check_width(op, a.d);
  if (a.shift) samples_of(op, a.rows, a.rows_per_sample);
  const bool want_params = g.post_dw || g.post_db || g.pre_dw || g.pre_db || g.in_dw || g.in_db;
  const bool want_mod = a.shift && (g.dshift || g.dscale);
  const bool want_red = a.input.enabled && (want_params || want_mod);
  const int64_t chunks = row_chunks(a.rows);
  if (want_params && chunks > 65535)
    throw std::invalid_argument(std::string(op) + ": too many rows " + std::to_string(a.rows));
  const int64_t samples = want_mod ? samples_of(op, a.rows, a.rows_per_sample) : 0;
  Workspace red(want_red ? static_cast<size_t>(2 * a.rows) * sizeof(float) : 0);
  if (a.d <= kWarpRowMaxD) {
    VT_CUDA_DISPATCH_IO(op, a.io, T,
                        VT_ROW_VEC_DISPATCH((input_bwd_vec_ok<T>(a, g)), T, V,
                                            auto k = input_backward_rows_warp_kernel<T, V>;
                                            k<<<warp_row_blocks(a.rows), 32 * kWarpRows, 0, stream>>>(
                                                a, mean, rstd, g, red.f32())));
  } else {
    const size_t smem = static_cast<size_t>(3 * a.d) * sizeof(float);
    VT_CUDA_DISPATCH_IO(op, a.io, T,
                        input_backward_rows_kernel<T><<<static_cast<unsigned>(a.rows), row_threads(a.d), smem,
                                                        stream>>>(a, mean, rstd, g, red.f32()));
  }
  check_launch(op);
  if (want_params) {
    // Only the accumulators of enabled norms with a stream are meaningful.
    SiameseInputGradArgs gp = g;
    if (!a.x || !a.post.enabled) gp.post_dw = gp.post_db = nullptr;
    if (!a.y || !a.pre.enabled) gp.pre_dw = gp.pre_db = nullptr;
    if (!a.input.enabled) gp.in_dw = gp.in_db = nullptr;
    Workspace partial(static_cast<size_t>(chunks * 6 * a.d) * sizeof(float));
    const dim3 grid(col_blocks(a.d), static_cast<unsigned>(chunks));
    VT_CUDA_DISPATCH_IO(op, a.io, T,
                        input_param_partials_kernel<T><<<grid, kColThreads, 0, stream>>>(a, mean, rstd, gp,
                                                                                        red.f32(), partial.f32()));
    check_launch(op);
    finalize_chunks<6>(partial.f32(), chunks, a.d,
                       ChunkOutputs<6>{{gp.post_dw, gp.post_db, gp.pre_dw, gp.pre_db, gp.in_dw, gp.in_db}}, stream,
                       op);
  }
  if (want_mod) {
    const dim3 grid(col_blocks(a.d), static_cast<unsigned>(samples));
    VT_CUDA_DISPATCH_IO(op, a.io, T,
                        input_mod_grads_kernel<T><<<grid, kColThreads, 0, stream>>>(a, mean, rstd, g, red.f32()));
    check_launch(op);
  }
}

void siamese_residual_forward(const SiameseResidualArgs& a, void* x_out, void* y_out, cudaStream_t stream) {
  const char* op = "cuda::siamese_residual_forward";
  if (a.rows == 0 || a.d == 0) return;
  if (a.gate || a.drop_scale) samples_of(op, a.rows, a.rows_per_sample);
  VT_SIAMESE_DISPATCH(op, a, VT_ROW_VEC_DISPATCH((residual_vec_ok<T, A>(a, {x_out, y_out}, a.f)), T, V,
                                                 auto k = residual_forward_kernel<T, A, V>;
                                                 k<<<grid_1d(a.rows * a.d / V, 256), 256, 0, stream>>>(
                                                     a, static_cast<T*>(x_out), static_cast<T*>(y_out))));
  check_launch(op);
}

void siamese_residual_backward(const SiameseResidualArgs& a, const void* dx_out, const void* dy_out, void* df,
                               void* dgate, cudaStream_t stream) {
  const char* op = "cuda::siamese_residual_backward";
  if (a.rows == 0 || a.d == 0) return;
  const int64_t samples = (a.gate || a.drop_scale) ? samples_of(op, a.rows, a.rows_per_sample) : 0;
  VT_SIAMESE_DISPATCH(op, a, VT_ROW_VEC_DISPATCH((residual_vec_ok<T, A>(a, {dx_out, dy_out}, df)), T, V,
                                                 auto k = residual_backward_kernel<T, A, V>;
                                                 k<<<grid_1d(a.rows * a.d / V, 256), 256, 0, stream>>>(
                                                     a, static_cast<const T*>(dx_out),
                                                     static_cast<const T*>(dy_out), static_cast<A*>(df))));
  check_launch(op);
  if (!dgate || !a.gate) return;
  const dim3 grid(col_blocks(a.d), static_cast<unsigned>(samples));
  VT_SIAMESE_DISPATCH(op, a, auto k = residual_dgate_kernel<T, A>;
                      k<<<grid, kColThreads, 0, stream>>>(a, static_cast<const T*>(dx_out),
                                                          static_cast<const T*>(dy_out), static_cast<T*>(dgate)));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
