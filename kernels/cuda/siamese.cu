#include "kernels/cuda/siamese.h"

#include <initializer_list>
#include <string>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/row_warp.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

void check_width(const char* op, int64_t d) {
  if (d > kRowMaxD)
    throw std::invalid_argument(std::string(op) + ": row width d=" + std::to_string(d) +
                                " exceeds the CUDA kernel's limit of " + std::to_string(kRowMaxD));
}

template <typename T>
__device__ __forceinline__ const T* row_ptr(const void* p, int64_t offset) {
  return p ? static_cast<const T*>(p) + offset : nullptr;
}

__device__ __forceinline__ float wt(const float* w, int64_t j) { return w ? w[j] : 1.0f; }
__device__ __forceinline__ float bs(const float* b, int64_t j) { return b ? b[j] : 0.0f; }

// ---------------------------------------------------------------- forward
// Row kernels (row_warp.cuh): x, y and s stay in registers, V-wide loads and
// stores, one warp per row up to 1024 columns, a block of warps per row beyond.

// The statistics of norm slot `slot` (0 post, 1 pre, 2 input) of row r:
// read back when saved, else computed from v and written.
template <int V, bool M>
__device__ __forceinline__ void slot_stats(const LaneRow<V, M>& L, const float (&v)[kLaneElems], float eps, bool saved,
                                           float* mean, float* rstd, int64_t i, float& mu, float& rs) {
  if (saved) {
    mu = mean[i], rs = rstd[i];
    return;
  }
  L.mean_rstd(v, eps, mu, rs);
  if (L.lane == 0) mean[i] = mu, rstd[i] = rs;
}

// v = LN_n(v) over the thread's columns when n is enabled (statistics in
// slot i of mean/rstd, computed unless saved).
template <int V, bool M>
__device__ __forceinline__ void norm_slot(const LaneRow<V, M>& L, float (&v)[kLaneElems], const SiameseNormArgs& n,
                                          float eps, bool saved, float* mean, float* rstd, int64_t i) {
  if (!n.enabled) return;
  float mu, rs;
  slot_stats(L, v, eps, saved, mean, rstd, i, mu, rs);
  L.normalize(v, mu, rs, n.weight, n.bias);
}

// The input map of row r: xv holds x's row when a.x is set, and
// stage_y(yv) puts y's row into yv when a.y is (called after u is written,
// so a plain load keeps x's and y's rows from being live at once; both are
// overwritten). Writes u (when non-null), z and the statistics of the
// enabled norms. Every thread of the row must call it (the branches depend
// on kernel arguments only).
template <typename T, typename A, int V, bool M, typename StageY>
__device__ __forceinline__ void input_row_forward(const SiameseInputArgs& a, const LaneRow<V, M>& L, int64_t r,
                                                  float (&xv)[kLaneElems], float (&yv)[kLaneElems],
                                                  const StageY& stage_y, T* u, A* z, float* mean, float* rstd,
                                                  bool saved) {
  const int64_t d = a.d, rows = a.rows;
  if (a.x) {
    norm_slot(L, xv, a.post, a.eps, saved, mean, rstd, r);
  } else {
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i) xv[i] = 0.0f;
  }
  if (u) L.store(u + r * d, xv);
  if (a.y) {
    stage_y(yv);
    norm_slot(L, yv, a.pre, a.eps, saved, mean, rstd, rows + r);
#pragma unroll
    for (int i = 0; i < kLaneElems; ++i) xv[i] += yv[i];
  }
  norm_slot(L, xv, a.input, a.eps, saved, mean, rstd, 2 * rows + r);
  if (a.shift) {
    const int64_t m = (r / a.rows_per_sample) * a.mod_ld;
    const T* sh = static_cast<const T*>(a.shift) + m;
    const T* sc = static_cast<const T*>(a.scale) + m;
#pragma unroll
    for (int c = 0; c < LaneRow<V, M>::C; ++c) {
      if (!L.has(c)) continue;
      float fs[V], fc[V];
      ld_vec<V>(sh, L.col(c), fs);
      ld_vec<V>(sc, L.col(c), fc);
#pragma unroll
      for (int k = 0; k < V; ++k) xv[c * V + k] = xv[c * V + k] * (1.0f + fc[k]) + fs[k];
    }
  }
  L.store(z + r * d, xv);
}

template <typename T, typename A, int V, bool M>
__global__ void input_forward_kernel(SiameseInputArgs a, T* u, A* z, float* mean, float* rstd, bool saved) {
  int64_t r;
  const LaneRow<V, M> L = lane_row<V, M>(a.d, r);
  if (r >= a.rows) return;
  float xv[kLaneElems], yv[kLaneElems];
  // x's row is in registers before u (which may alias x) is written.
  if (a.x) L.load(static_cast<const T*>(a.x) + r * a.d, xv);
  const T* y = row_ptr<T>(a.y, r * a.d);
  input_row_forward<T, A, V, M>(
      a, L, r, xv, yv, [&](float (&v)[kLaneElems]) { L.load(y, v); }, u, z, mean, rstd, saved);
}

// Sublayer k's residual, then sublayer k+1's input map of the same row from
// the new stream values in registers: x and y are read once. The residual is
// computed as residual_forward_kernel does and the input map sees the values
// as stored (bf16-rounded for bf16 streams), so the result is the one of the
// two kernels in sequence. Aliasing per thread and column: every element is
// read before the same thread writes it.
template <typename T, typename A, int V, bool M>
__global__ void residual_input_forward_kernel(SiameseResidualArgs res, T* x_out, T* y_out, SiameseInputArgs a, T* u,
                                              A* z, float* mean, float* rstd) {
  int64_t r;
  const LaneRow<V, M> L = lane_row<V, M>(a.d, r);
  if (r >= a.rows) return;
  const int64_t d = a.d, i0 = r * d, b = r / res.rows_per_sample;
  const float ds = res.drop_scale ? res.drop_scale[b] : 1.0f;
  const T* gate = res.gate ? static_cast<const T*>(res.gate) + b * res.gate_ld : nullptr;
  const T* ur = row_ptr<T>(res.u, i0);
  const T* yr = row_ptr<T>(res.y, i0);
  const A* fr = static_cast<const A*>(res.f) + i0;
  float xv[kLaneElems], yv[kLaneElems];
#pragma unroll
  for (int c = 0; c < LaneRow<V, M>::C; ++c) {
    float* xc = xv + c * V;
    float* yc = yv + c * V;
#pragma unroll
    for (int k = 0; k < V; ++k) xc[k] = yc[k] = 0.0f;
    if (!L.has(c)) continue;
    const int64_t j = L.col(c);
    float o[V], g[V];
    ld_vec<V>(fr, j, o);
    if (gate) ld_vec<V>(gate, j, g);
#pragma unroll
    for (int k = 0; k < V; ++k) o[k] *= ds * (gate ? g[k] : 1.0f);
    if (ur) {
      ld_vec<V>(ur, j, xc);
#pragma unroll
      for (int k = 0; k < V; ++k) xc[k] += o[k] * res.inv_c;
      st_vec<V>(x_out + i0, j, xc);
#pragma unroll
      for (int k = 0; k < V; ++k) xc[k] = as_stored<T>(xc[k]);
    }
    if (yr) {
      ld_vec<V>(yr, j, yc);
#pragma unroll
      for (int k = 0; k < V; ++k) yc[k] += o[k];
      st_vec<V>(y_out + i0, j, yc);
#pragma unroll
      for (int k = 0; k < V; ++k) yc[k] = as_stored<T>(yc[k]);
    }
  }
  input_row_forward<T, A, V, M>(
      a, L, r, xv, yv, [](float (&)[kLaneElems]) {}, u, z, mean, rstd, false);  // y's row is in yv already
}

// --------------------------------------------------------------- backward

// Activation gradients of one row (row_warp.cuh layout). red [2, rows]
// receives the input norm's row scalars (mean of g and of g * s_hat) for the
// parameter pass. x, y and s (then ds) stay in registers; dz, scale and du are
// re-read per pass (L1/L2 hits).
template <typename T, int V, bool M>
__global__ void input_backward_rows_kernel(SiameseInputArgs a, const float* __restrict__ mean,
                                           const float* __restrict__ rstd, SiameseInputGradArgs g, float* red) {
  const int64_t d = a.d, rows = a.rows;
  int64_t r;
  const LaneRow<V, M> L = lane_row<V, M>(d, r);
  if (r >= rows) return;
  constexpr int C = LaneRow<V, M>::C;
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
  float si[2] = {0.0f, 0.0f};
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
        si[0] += gg;
        si[1] += gg * ((sv[i] - ms) * rs);
      }
    }
  }
  float ai = 0.0f, bi = 0.0f;
  if (a.input.enabled) {
    L.sum(si);
    ai = si[0] * inv_d, bi = si[1] * inv_d;
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
  if ((x && a.post.enabled) || (y && a.pre.enabled)) L.sum(sp);
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

// The elementwise quantities of row r, columns j .. j + V - 1 that the
// parameter and modulation gradients sum (recomputed from the saved
// statistics), read with V-wide loads.
struct Elem {
  float xh = 0, yh = 0, sh = 0, dn = 0, ds = 0, dut = 0, nval = 0, dz = 0;
};

template <typename T, int V>
__device__ __forceinline__ void elems(const SiameseInputArgs& a, const float* mean, const float* rstd,
                                      const SiameseInputGradArgs& g, const float* red, int64_t r, int64_t j,
                                      Elem (&e)[V]) {
  const int64_t d = a.d, rows = a.rows, i = r * d + j;
  float u[V], v[V], t[V];
#pragma unroll
  for (int k = 0; k < V; ++k) e[k] = Elem{}, u[k] = v[k] = 0.0f;
  if (a.x) {
    ld_vec<V>(static_cast<const T*>(a.x), i, t);
    const float mu = mean[r], rs = rstd[r];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (a.post.enabled) {
        e[k].xh = (t[k] - mu) * rs;
        u[k] = e[k].xh * wt(a.post.weight, j + k) + bs(a.post.bias, j + k);
      } else {
        u[k] = t[k];
      }
    }
  }
  if (a.y) {
    ld_vec<V>(static_cast<const T*>(a.y), i, t);
    const float mu = mean[rows + r], rs = rstd[rows + r];
#pragma unroll
    for (int k = 0; k < V; ++k) {
      if (a.pre.enabled) {
        e[k].yh = (t[k] - mu) * rs;
        v[k] = e[k].yh * wt(a.pre.weight, j + k) + bs(a.pre.bias, j + k);
      } else {
        v[k] = t[k];
      }
    }
  }
  ld_vec<V>(static_cast<const T*>(g.dz), i, t);
#pragma unroll
  for (int k = 0; k < V; ++k) e[k].dz = e[k].dn = t[k];
  if (a.shift) {
    ld_vec<V>(static_cast<const T*>(a.scale), (r / a.rows_per_sample) * a.mod_ld + j, t);
#pragma unroll
    for (int k = 0; k < V; ++k) e[k].dn = e[k].dz * (1.0f + t[k]);
  }
  const float ms = mean[2 * rows + r], rs = rstd[2 * rows + r];
#pragma unroll
  for (int k = 0; k < V; ++k) {
    const float s = u[k] + v[k];
    if (a.input.enabled) {
      e[k].sh = (s - ms) * rs;
      e[k].nval = e[k].sh * wt(a.input.weight, j + k) + bs(a.input.bias, j + k);
      e[k].ds = rs * (e[k].dn * wt(a.input.weight, j + k) - red[r] - e[k].sh * red[rows + r]);
    } else {
      e[k].nval = s;
      e[k].ds = e[k].dn;
    }
  }
  if (a.x && g.du) {
    ld_vec<V>(static_cast<const T*>(g.du), i, t);
#pragma unroll
    for (int k = 0; k < V; ++k) e[k].dut = t[k] + e[k].ds;
  } else {
#pragma unroll
    for (int k = 0; k < V; ++k) e[k].dut = 0.0f + e[k].ds;
  }
}

// The column kernels below give each thread V consecutive columns (a warp a
// strip of 32 V columns) read with V-wide loads; every column is still summed
// over its rows in row order, so the bits do not depend on V.

// partial [chunks][6][d]: post_dw, post_db, pre_dw, pre_db, in_dw, in_db.
template <typename T, int V>
__global__ void input_param_partials_kernel(SiameseInputArgs a, const float* __restrict__ mean,
                                            const float* __restrict__ rstd, SiameseInputGradArgs g,
                                            const float* __restrict__ red, float* __restrict__ partial) {
  const int64_t d = a.d;
  const int64_t j = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (j >= d) return;
  const int64_t c = blockIdx.y;
  const int64_t r0 = c * kRowsPerChunk, r1 = min(a.rows, r0 + kRowsPerChunk);
  float p[6][V];
#pragma unroll
  for (int q = 0; q < 6; ++q)
#pragma unroll
    for (int k = 0; k < V; ++k) p[q][k] = 0.0f;
  for (int64_t r = r0; r < r1; ++r) {
    Elem e[V];
    elems<T, V>(a, mean, rstd, g, red, r, j, e);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      p[0][k] += e[k].dut * e[k].xh;
      p[1][k] += e[k].dut;
      p[2][k] += e[k].ds * e[k].yh;
      p[3][k] += e[k].ds;
      p[4][k] += e[k].dn * e[k].sh;
      p[5][k] += e[k].dn;
    }
  }
#pragma unroll
  for (int q = 0; q < 6; ++q)
#pragma unroll
    for (int k = 0; k < V; ++k) partial[(c * 6 + q) * d + j + k] = p[q][k];
}

// dshift[b] = sum over the sample's rows of dz, dscale[b] = of dz * n.
template <typename T, int V>
__global__ void input_mod_grads_kernel(SiameseInputArgs a, const float* __restrict__ mean,
                                       const float* __restrict__ rstd, SiameseInputGradArgs g,
                                       const float* __restrict__ red) {
  const int64_t j = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (j >= a.d) return;
  const int64_t b = blockIdx.y;
  float msh[V], msc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) msh[k] = msc[k] = 0.0f;
  for (int64_t r = b * a.rows_per_sample; r < (b + 1) * a.rows_per_sample; ++r) {
    Elem e[V];
    elems<T, V>(a, mean, rstd, g, red, r, j, e);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      msh[k] += e[k].dz;
      msc[k] += e[k].dz * e[k].nval;
    }
  }
#pragma unroll
  for (int k = 0; k < V; ++k) {
    if (g.dshift) st(static_cast<T*>(g.dshift), b * a.mod_ld + j + k, msh[k]);
    if (g.dscale) st(static_cast<T*>(g.dscale), b * a.mod_ld + j + k, msc[k]);
  }
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

// dgate[b] = drop_scale[b] * per-sample column sums of f * dout (column strips
// as the input kernels' column sums).
template <typename T, typename A, int V>
__global__ void residual_dgate_kernel(SiameseResidualArgs a, const T* dx_out, const T* dy_out, T* dgate) {
  const int64_t j = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * V;
  if (j >= a.d) return;
  const int64_t b = blockIdx.y;
  const A* f = static_cast<const A*>(a.f);
  float acc[V];
#pragma unroll
  for (int k = 0; k < V; ++k) acc[k] = 0.0f;
  for (int64_t r = b * a.rows_per_sample; r < (b + 1) * a.rows_per_sample; ++r) {
    const int64_t i = r * a.d + j;
    float fv[V], dx[V], dy[V];
    ld_vec<V>(f, i, fv);
    if (dx_out) ld_vec<V>(dx_out, i, dx);
    if (dy_out) ld_vec<V>(dy_out, i, dy);
#pragma unroll
    for (int k = 0; k < V; ++k) {
      const float dout = (dx_out ? dx[k] * a.inv_c : 0.0f) + (dy_out ? dy[k] : 0.0f);
      acc[k] += fv[k] * dout;
    }
  }
  const float ds = a.drop_scale ? a.drop_scale[b] : 1.0f;
#pragma unroll
  for (int k = 0; k < V; ++k) st(dgate, b * a.gate_ld + j + k, ds * acc[k]);
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

// Columns per thread of the column-sum kernels: the 128-bit width of the
// stream dtype, at most 4 (their per-column state is large).
template <int V>
constexpr int col_vec() {
  return V > 4 ? 4 : V;
}

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
  const RowGrid rg = row_grid(a.rows, a.d);
  VT_SIAMESE_DISPATCH(op, a, VT_ROW_DISPATCH((input_vec_ok<T, A>(a, u, z)), a.d, T, V, M,
                                             auto k = input_forward_kernel<T, A, V, M>;
                                             k<<<rg.blocks, rg.threads, 0, stream>>>(
                                                 a, static_cast<T*>(u), static_cast<A*>(z), mean, rstd,
                                                 use_saved_stats)));
  check_launch(op);
}

void siamese_residual_input_forward(const SiameseResidualArgs& res, void* x_out, void* y_out,
                                    const SiameseInputArgs& next, void* u, void* z, float* mean, float* rstd,
                                    cudaStream_t stream) {
  const char* op = "cuda::siamese_residual_input_forward";
  auto fail = [&](const std::string& what) { throw std::invalid_argument(std::string(op) + ": " + what); };
  if (res.rows != next.rows || res.d != next.d)
    fail("the residual's rows x d (" + std::to_string(res.rows) + " x " + std::to_string(res.d) +
         ") differ from the input's (" + std::to_string(next.rows) + " x " + std::to_string(next.d) + ")");
  if (res.io != next.io || res.act != next.act)
    fail(std::string("the residual's dtypes (io ") + dtype_name(res.io) + ", act " + dtype_name(res.act) +
         ") differ from the input's (io " + dtype_name(next.io) + ", act " + dtype_name(next.act) + ")");
  if ((res.u != nullptr) != (x_out != nullptr) || (res.y != nullptr) != (y_out != nullptr))
    fail("x_out / y_out must be given exactly for the streams the residual updates (u / y)");
  if (next.x && next.x != x_out) fail("the input's stream x must be the residual's x_out");
  if (next.y && next.y != y_out) fail("the input's stream y must be the residual's y_out");
  if (res.rows == 0 || res.d == 0) return;
  check_width(op, res.d);
  if (res.gate || res.drop_scale) samples_of(op, res.rows, res.rows_per_sample);
  if (next.shift) samples_of(op, next.rows, next.rows_per_sample);
  const RowGrid rg = row_grid(res.rows, res.d);
  VT_SIAMESE_DISPATCH(op, next,
                      VT_ROW_DISPATCH((input_vec_ok<T, A>(next, u, z) &&
                                       residual_vec_ok<T, A>(res, {x_out, y_out}, res.f)),
                                      res.d, T, V, M, auto k = residual_input_forward_kernel<T, A, V, M>;
                                      k<<<rg.blocks, rg.threads, 0, stream>>>(
                                          res, static_cast<T*>(x_out), static_cast<T*>(y_out), next,
                                          static_cast<T*>(u), static_cast<A*>(z), mean, rstd)));
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
  const RowGrid rg = row_grid(a.rows, a.d);
  VT_CUDA_DISPATCH_IO(op, a.io, T,
                      VT_ROW_DISPATCH((input_bwd_vec_ok<T>(a, g)), a.d, T, V, M,
                                      auto k = input_backward_rows_kernel<T, V, M>;
                                          k<<<rg.blocks, rg.threads, 0, stream>>>(a, mean, rstd, g, red.f32())));
  check_launch(op);
  if (want_params) {
    // Only the accumulators of enabled norms with a stream are meaningful.
    SiameseInputGradArgs gp = g;
    if (!a.x || !a.post.enabled) gp.post_dw = gp.post_db = nullptr;
    if (!a.y || !a.pre.enabled) gp.pre_dw = gp.pre_db = nullptr;
    if (!a.input.enabled) gp.in_dw = gp.in_db = nullptr;
    Workspace partial(static_cast<size_t>(chunks * 6 * a.d) * sizeof(float));
    VT_CUDA_DISPATCH_IO(op, a.io, T,
                        VT_ROW_VEC_DISPATCH((input_bwd_vec_ok<T>(a, g)), T, V, constexpr int CV = col_vec<V>();
                                            auto k = input_param_partials_kernel<T, CV>;
                                            const dim3 grid(col_strip_blocks(a.d, CV), static_cast<unsigned>(chunks));
                                            k<<<grid, kColThreads, 0, stream>>>(a, mean, rstd, gp, red.f32(),
                                                                                partial.f32())));
    check_launch(op);
    finalize_chunks<6>(partial.f32(), chunks, a.d,
                       ChunkOutputs<6>{{gp.post_dw, gp.post_db, gp.pre_dw, gp.pre_db, gp.in_dw, gp.in_db}}, stream,
                       op);
  }
  if (want_mod) {
    VT_CUDA_DISPATCH_IO(op, a.io, T,
                        VT_ROW_VEC_DISPATCH((input_bwd_vec_ok<T>(a, g)), T, V, constexpr int CV = col_vec<V>();
                                            auto k = input_mod_grads_kernel<T, CV>;
                                            const dim3 grid(col_strip_blocks(a.d, CV), static_cast<unsigned>(samples));
                                            k<<<grid, kColThreads, 0, stream>>>(a, mean, rstd, g, red.f32())));
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
  VT_SIAMESE_DISPATCH(op, a, VT_ROW_VEC_DISPATCH((residual_vec_ok<T, A>(a, {dx_out, dy_out}, a.f)), T, V,
                                                 constexpr int CV = col_vec<V>();
                                                 auto k = residual_dgate_kernel<T, A, CV>;
                                                 const dim3 grid(col_strip_blocks(a.d, CV),
                                                                 static_cast<unsigned>(samples));
                                                 k<<<grid, kColThreads, 0, stream>>>(
                                                     a, static_cast<const T*>(dx_out), static_cast<const T*>(dy_out),
                                                     static_cast<T*>(dgate))));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
