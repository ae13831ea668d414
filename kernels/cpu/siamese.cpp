#include "kernels/cpu/siamese.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vt {
namespace cpu {

namespace {

// Row statistics exactly as kernels/cpu/layernorm.cpp computes them (two
// passes in double), so the fused kernel reproduces the unfused oracle.
inline void row_stats(const float* v, int64_t d, float eps, float& mean, float& rstd) {
  double s = 0.0;
#pragma omp simd reduction(+ : s)
  for (int64_t j = 0; j < d; ++j) s += v[j];
  const double mu = s / static_cast<double>(d);
  double ss = 0.0;
#pragma omp simd reduction(+ : ss)
  for (int64_t j = 0; j < d; ++j) {
    const double c = v[j] - mu;
    ss += c * c;
  }
  mean = static_cast<float>(mu);
  rstd = static_cast<float>(1.0 / std::sqrt(ss / static_cast<double>(d) + static_cast<double>(eps)));
}

// out = (v - mu) * rs * w + b with w/b optional.
inline void norm_row(const float* v, float mu, float rs, const SiameseNormPtrs& n, int64_t d, float* out) {
  const float* w = n.weight;
  const float* b = n.bias;
#pragma omp simd
  for (int64_t j = 0; j < d; ++j) {
    float t = (v[j] - mu) * rs;
    if (w) t *= w[j];
    if (b) t += b[j];
    out[j] = t;
  }
}

struct RowStats {
  float mx = 0, rx = 0, my = 0, ry = 0, ms = 0, rs = 0;
};

inline RowStats load_stats(const float* mean, const float* rstd, int64_t rows, int64_t r) {
  RowStats st;
  st.mx = mean[r], st.rx = rstd[r];
  st.my = mean[rows + r], st.ry = rstd[rows + r];
  st.ms = mean[2 * rows + r], st.rs = rstd[2 * rows + r];
  return st;
}

// Recomputes, for row r, u and s into the caller's buffers (d floats each).
inline void recompute_us(const SiameseInputRows& a, int64_t r, const RowStats& st, float* u, float* s) {
  const int64_t d = a.d;
  if (a.x) {
    const float* xr = a.x + r * d;
    if (a.post.enabled) norm_row(xr, st.mx, st.rx, a.post, d, u);
    else std::copy(xr, xr + d, u);
  } else {
    std::fill(u, u + d, 0.0f);
  }
  if (a.y) {
    const float* yr = a.y + r * d;
    if (a.pre.enabled) {
      norm_row(yr, st.my, st.ry, a.pre, d, s);
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) s[j] += u[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) s[j] = u[j] + yr[j];
    }
  } else {
    std::copy(u, u + d, s);
  }
}

inline float wt(const float* w, int64_t j) { return w ? w[j] : 1.0f; }

// Backward of one LayerNorm row from its input row v and saved statistics
// (mu, rs), given the output gradient g (times (1 + gscale) when gscale is
// set, the DiT modulate): with gw = g * w and v_hat = (v - mu) rs,
//   out = [base +] rs (gw - a - v_hat b),  a = mean(gw), b = mean(gw v_hat).
// a and b are returned for the parameter-gradient pass.
__attribute__((always_inline)) inline void norm_row_backward(const float* g, const float* gscale, const float* v,
                                                             float mu, float rs, const float* w, const float* base,
                                                             float inv_d, int64_t d, float* out, float* a_out,
                                                             float* b_out) {
  float sg = 0.0f, sgx = 0.0f;
#pragma omp simd reduction(+ : sg, sgx)
  for (int64_t j = 0; j < d; ++j) {
    const float gg = (gscale ? g[j] * (1.0f + gscale[j]) : g[j]) * wt(w, j);
    sg += gg;
    sgx += gg * ((v[j] - mu) * rs);
  }
  const float a = sg * inv_d, b = sgx * inv_d;
  *a_out = a, *b_out = b;
  if (base) {
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) {
      const float gg = (gscale ? g[j] * (1.0f + gscale[j]) : g[j]) * wt(w, j);
      out[j] = base[j] + rs * (gg - a - (v[j] - mu) * rs * b);
    }
  } else {
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) {
      const float gg = (gscale ? g[j] * (1.0f + gscale[j]) : g[j]) * wt(w, j);
      out[j] = rs * (gg - a - (v[j] - mu) * rs * b);
    }
  }
}

}  // namespace

namespace {

// The input map of row r (see siamese_input_forward); ur is u's row or a
// scratch row of d floats.
void input_forward_row(const SiameseInputRows& a, int64_t r, float* ur, float* z, float* mean, float* rstd,
                       bool use_saved_stats) {
  const int64_t rows = a.rows, d = a.d;
  float* zr = z + r * d;
  if (a.x) {
    const float* xr = a.x + r * d;
    if (a.post.enabled) {
      if (!use_saved_stats) row_stats(xr, d, a.eps, mean[r], rstd[r]);
      norm_row(xr, mean[r], rstd[r], a.post, d, ur);
    } else if (ur != xr) {
      std::copy(xr, xr + d, ur);
    }
  } else {
    std::fill(ur, ur + d, 0.0f);
  }
  // s is built in z's row, then normalised/modulated in place.
  if (a.y) {
    const float* yr = a.y + r * d;
    if (a.pre.enabled) {
      if (!use_saved_stats) row_stats(yr, d, a.eps, mean[rows + r], rstd[rows + r]);
      norm_row(yr, mean[rows + r], rstd[rows + r], a.pre, d, zr);
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) zr[j] += ur[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) zr[j] = ur[j] + yr[j];
    }
  } else {
    std::copy(ur, ur + d, zr);
  }
  if (a.input.enabled) {
    if (!use_saved_stats) row_stats(zr, d, a.eps, mean[2 * rows + r], rstd[2 * rows + r]);
    norm_row(zr, mean[2 * rows + r], rstd[2 * rows + r], a.input, d, zr);
  }
  if (a.shift) {
    const int64_t b = r / a.rows_per_sample;
    const float* sh = a.shift + b * a.mod_ld;
    const float* sc = a.scale + b * a.mod_ld;
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) zr[j] = zr[j] * (1.0f + sc[j]) + sh[j];
  }
}

// The residual update of row r (see siamese_residual_forward).
void residual_forward_row(const SiameseResidualRows& a, int64_t r, float* x_out, float* y_out) {
  const int64_t d = a.d;
  const int64_t b = r / a.rows_per_sample;
  const float ds = a.drop_scale ? a.drop_scale[b] : 1.0f;
  const float* gr = a.gate ? a.gate + b * a.gate_ld : nullptr;
  const float* fr = a.f + r * d;
  const float* ur = a.u ? a.u + r * d : nullptr;
  const float* yr = a.y ? a.y + r * d : nullptr;
  float* xo = x_out ? x_out + r * d : nullptr;
  float* yo = y_out ? y_out + r * d : nullptr;
#pragma omp simd
  for (int64_t j = 0; j < d; ++j) {
    const float o = ds * (gr ? gr[j] : 1.0f) * fr[j];
    if (ur) xo[j] = ur[j] + o * a.inv_c;
    if (yr) yo[j] = yr[j] + o;
  }
}

}  // namespace

void siamese_input_forward(const SiameseInputRows& a, float* u, float* z, float* mean, float* rstd,
                           bool use_saved_stats) {
  const int64_t rows = a.rows, d = a.d;
  if (rows == 0 || d == 0) return;
#pragma omp parallel
  {
    std::vector<float> ubuf(u ? 0 : d);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r)
      input_forward_row(a, r, u ? u + r * d : ubuf.data(), z, mean, rstd, use_saved_stats);
  }
}

void siamese_residual_input_forward(const SiameseResidualRows& res, float* x_out, float* y_out,
                                    const SiameseInputRows& next, float* u, float* z, float* mean, float* rstd) {
  const int64_t rows = next.rows, d = next.d;
  if (rows == 0 || d == 0) return;
  // Row by row, the residual and then the input map: the same per-row
  // arithmetic as the two calls in sequence (bitwise), while the new stream
  // rows are still in cache.
#pragma omp parallel
  {
    std::vector<float> ubuf(u ? 0 : d);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      residual_forward_row(res, r, x_out, y_out);
      input_forward_row(next, r, u ? u + r * d : ubuf.data(), z, mean, rstd, false);
    }
  }
}

void siamese_input_backward(const SiameseInputRows& a, const float* mean, const float* rstd,
                            const SiameseInputGradPtrs& g) {
  const int64_t rows = a.rows, d = a.d;
  if (rows == 0 || d == 0) return;
  const float inv_d = 1.0f / static_cast<float>(d);
  // Per-row reduction scalars of the three LayerNorm backward passes,
  // [6, rows]: (a_in, b_in, a_post, b_post, a_pre, b_pre), each the row mean
  // of g and of g * x_hat. The parameter pass below reuses them.
  std::vector<float> red(static_cast<size_t>(6 * rows), 0.0f);

  // Pass 1, over rows: activation gradients dx, dy.
#pragma omp parallel
  {
    std::vector<float> u(d), s(d), ds(d), dut(d);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const RowStats st = load_stats(mean, rstd, rows, r);
      recompute_us(a, r, st, u.data(), s.data());
      const float* dzr = g.dz + r * d;
      const float* sc = a.shift ? a.scale + (r / a.rows_per_sample) * a.mod_ld : nullptr;
      // ds = LN_in backward of dn = dz * (1 + scale).
      if (a.input.enabled) {
        norm_row_backward(dzr, sc, s.data(), st.ms, st.rs, a.input.weight, nullptr, inv_d, d, ds.data(), &red[r],
                          &red[rows + r]);
      } else {
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) ds[j] = sc ? dzr[j] * (1.0f + sc[j]) : dzr[j];
      }
      if (a.x) {
        const float* dur = g.du ? g.du + r * d : nullptr;
#pragma omp simd
        for (int64_t j = 0; j < d; ++j) dut[j] = (dur ? dur[j] : 0.0f) + ds[j];
        float* dxr = g.dx + r * d;
        if (a.post.enabled) {
          norm_row_backward(dut.data(), nullptr, a.x + r * d, st.mx, st.rx, a.post.weight, nullptr, inv_d, d, dxr,
                            &red[2 * rows + r], &red[3 * rows + r]);
        } else {
          std::copy(dut.begin(), dut.end(), dxr);
        }
      }
      if (a.y) {
        const float* dpr = g.dy_pass ? g.dy_pass + r * d : nullptr;
        float* dyr = g.dy + r * d;
        if (a.pre.enabled) {
          norm_row_backward(ds.data(), nullptr, a.y + r * d, st.my, st.ry, a.pre.weight, dpr, inv_d, d, dyr,
                            &red[4 * rows + r], &red[5 * rows + r]);
        } else {
#pragma omp simd
          for (int64_t j = 0; j < d; ++j) dyr[j] = (dpr ? dpr[j] : 0.0f) + ds[j];
        }
      }
    }
  }

  const bool want_params = g.post_dw || g.post_db || g.pre_dw || g.pre_db || g.in_dw || g.in_db;
  const bool want_mod = a.shift && (g.dshift || g.dscale);
  if (!want_params && !want_mod) return;

  // Pass 2, over column blocks: parameter gradients (double accumulators,
  // rows summed in order, so results do not depend on the thread count) and
  // per-sample dshift/dscale. Elementwise values are recomputed from the
  // statistics and the per-row scalars of pass 1.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (d + kBlock - 1) / kBlock;
  float ones[kBlock], zeros[kBlock];
  for (int64_t j = 0; j < kBlock; ++j) ones[j] = 1.0f, zeros[j] = 0.0f;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kBlock, n = std::min(d, j0 + kBlock) - j0;
    double pw[kBlock] = {}, pb[kBlock] = {}, qw[kBlock] = {}, qb[kBlock] = {}, iw[kBlock] = {},
           ib[kBlock] = {}, msh[kBlock] = {}, msc[kBlock] = {};
    int64_t cur_b = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const RowStats st = load_stats(mean, rstd, rows, r);
      const int64_t b = r / a.rows_per_sample;
      if (want_mod && b != cur_b) {
        for (int64_t j = 0; j < n; ++j) {
          if (g.dshift) g.dshift[cur_b * a.mod_ld + j0 + j] = static_cast<float>(msh[j]);
          if (g.dscale) g.dscale[cur_b * a.mod_ld + j0 + j] = static_cast<float>(msc[j]);
          msh[j] = msc[j] = 0.0;
        }
        cur_b = b;
      }
      const float* sc = a.shift ? a.scale + b * a.mod_ld + j0 : nullptr;
      const float* dzr = g.dz + r * d + j0;
      // Branch-free vector loops over the block; the flags are per call.
      float xh[kBlock], yh[kBlock], sv[kBlock], dn[kBlock], ds[kBlock];
      for (int64_t j = 0; j < n; ++j) sv[j] = 0.0f;
      if (a.x) {
        const float* xr = a.x + r * d + j0;
        if (a.post.enabled) {
          const float* w = a.post.weight ? a.post.weight + j0 : ones;
          const float* bb = a.post.bias ? a.post.bias + j0 : zeros;
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) {
            xh[j] = (xr[j] - st.mx) * st.rx;
            sv[j] = xh[j] * w[j] + bb[j];
          }
        } else {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) sv[j] = xr[j];
        }
      }
      if (a.y) {
        const float* yr = a.y + r * d + j0;
        if (a.pre.enabled) {
          const float* w = a.pre.weight ? a.pre.weight + j0 : ones;
          const float* bb = a.pre.bias ? a.pre.bias + j0 : zeros;
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) {
            yh[j] = (yr[j] - st.my) * st.ry;
            sv[j] += yh[j] * w[j] + bb[j];
          }
        } else {
#pragma omp simd
          for (int64_t j = 0; j < n; ++j) sv[j] += yr[j];
        }
      }
      if (sc) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) dn[j] = dzr[j] * (1.0f + sc[j]);
      } else {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) dn[j] = dzr[j];
      }
      if (a.input.enabled) {
        const float* w = a.input.weight ? a.input.weight + j0 : ones;
        const float* bb = a.input.bias ? a.input.bias + j0 : zeros;
        const float ai = red[r], bi = red[rows + r];
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          const float shv = (sv[j] - st.ms) * st.rs;
          iw[j] += static_cast<double>(dn[j] * shv);
          ib[j] += static_cast<double>(dn[j]);
          ds[j] = st.rs * (dn[j] * w[j] - ai - shv * bi);
          sv[j] = shv * w[j] + bb[j];  // n, for dscale
        }
      } else {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) ds[j] = dn[j];
      }
      if (want_mod) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          msh[j] += static_cast<double>(dzr[j]);
          msc[j] += static_cast<double>(dzr[j] * sv[j]);
        }
      }
      if (a.x && a.post.enabled) {
        const float* dur = g.du ? g.du + r * d + j0 : zeros;
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          const float dut = dur[j] + ds[j];
          pw[j] += static_cast<double>(dut * xh[j]);
          pb[j] += static_cast<double>(dut);
        }
      }
      if (a.y && a.pre.enabled) {
#pragma omp simd
        for (int64_t j = 0; j < n; ++j) {
          qw[j] += static_cast<double>(ds[j] * yh[j]);
          qb[j] += static_cast<double>(ds[j]);
        }
      }
    }
    for (int64_t j = 0; j < n; ++j) {
      const int64_t jj = j0 + j;
      if (want_mod) {
        if (g.dshift) g.dshift[cur_b * a.mod_ld + jj] = static_cast<float>(msh[j]);
        if (g.dscale) g.dscale[cur_b * a.mod_ld + jj] = static_cast<float>(msc[j]);
      }
      if (g.post_dw) g.post_dw[jj] += static_cast<float>(pw[j]);
      if (g.post_db) g.post_db[jj] += static_cast<float>(pb[j]);
      if (g.pre_dw) g.pre_dw[jj] += static_cast<float>(qw[j]);
      if (g.pre_db) g.pre_db[jj] += static_cast<float>(qb[j]);
      if (g.in_dw) g.in_dw[jj] += static_cast<float>(iw[j]);
      if (g.in_db) g.in_db[jj] += static_cast<float>(ib[j]);
    }
  }
}

void siamese_residual_forward(const SiameseResidualRows& a, float* x_out, float* y_out) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a.rows; ++r) residual_forward_row(a, r, x_out, y_out);
}

void siamese_residual_backward(const SiameseResidualRows& a, const float* dx_out, const float* dy_out,
                               float* df, float* dgate) {
  const int64_t d = a.d;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < a.rows; ++r) {
    const int64_t b = r / a.rows_per_sample;
    const float ds = a.drop_scale ? a.drop_scale[b] : 1.0f;
    const float* gr = a.gate ? a.gate + b * a.gate_ld : nullptr;
    const float* dxr = dx_out ? dx_out + r * d : nullptr;
    const float* dyr = dy_out ? dy_out + r * d : nullptr;
    float* dfr = df + r * d;
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) {
      const float dout = (dxr ? dxr[j] * a.inv_c : 0.0f) + (dyr ? dyr[j] : 0.0f);
      dfr[j] = ds * (gr ? gr[j] : 1.0f) * dout;
    }
  }
  if (!dgate || !a.gate) return;
  // Per sample and column, rows summed in order (thread-count independent).
  const int64_t samples = a.rows / a.rows_per_sample;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < samples; ++b) {
    const float ds = a.drop_scale ? a.drop_scale[b] : 1.0f;
    float* dg = dgate + b * a.gate_ld;
    std::vector<double> acc(d, 0.0);
    for (int64_t r = b * a.rows_per_sample; r < (b + 1) * a.rows_per_sample; ++r) {
      const float* fr = a.f + r * d;
      const float* dxr = dx_out ? dx_out + r * d : nullptr;
      const float* dyr = dy_out ? dy_out + r * d : nullptr;
      for (int64_t j = 0; j < d; ++j) {
        const float dout = (dxr ? dxr[j] * a.inv_c : 0.0f) + (dyr ? dyr[j] : 0.0f);
        acc[j] += static_cast<double>(fr[j] * dout);
      }
    }
    for (int64_t j = 0; j < d; ++j) dg[j] = static_cast<float>(ds * acc[j]);
  }
}

}  // namespace cpu
}  // namespace vt
