#include "kernels/siamese.h"

#include <string>

#include "kernels/cpu/siamese.h"
#include "kernels/layernorm.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/siamese.h"
#endif

namespace vt {

namespace {

namespace oc = opcheck;

struct Dims {
  int64_t rows = 0, d = 0, samples = 1;
  Device dev;
};

const float* cptr(const Tensor& t) { return t.defined() ? t.f32() : nullptr; }
float* mptr(const Tensor& t) { return t.defined() ? t.f32() : nullptr; }

void check_rows(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  if (t.defined()) oc::f32_like(op, name, t, shape);
}

// An activation of F (z, f, df): contiguous, F32, or BF16 on CUDA (the
// kernels' `act` dtype); returns its dtype.
DType check_act(const char* op, const char* name, const Tensor& t, const Shape& shape) {
  const DType dt = oc::io_dtype(op, name, t);
  oc::like(op, name, t, shape, dt);
  return dt;
}

void check_norm(const char* op, const char* name, const SiameseNorm& n, int64_t d) {
  if (!n.enabled) return;
  const std::string w = std::string(name) + ".weight", b = std::string(name) + ".bias";
  if (n.weight.defined()) oc::f32_like(op, w.c_str(), n.weight, {d});
  if (n.bias.defined()) oc::f32_like(op, b.c_str(), n.bias, {d});
}

// [B, D] with unit stride along D (a column slice of the adaLN output).
void check_mod(const char* op, const char* name, const Tensor& t, int64_t d, int64_t rows, Dims& dims) {
  if (!t.defined()) return;
  oc::dtype(op, name, t, DType::F32);
  if (t.dim() != 2 || t.size(1) != d || t.strides()[1] != 1 || t.size(0) <= 0 || rows % t.size(0) != 0)
    oc::fail(op, oc::desc(name, t) + " must be [B, " + std::to_string(d) +
                     "] with unit column stride and B dividing the " + std::to_string(rows) + " rows");
  dims.samples = t.size(0);
}

Dims check_input(const char* op, const SiameseInputSpec& s, const Tensor& mean, const Tensor& rstd) {
  const Tensor& ref = s.x.defined() ? s.x : s.y;
  if (!ref.defined()) oc::fail(op, "neither stream x nor y is defined");
  Dims dm;
  dm.d = ref.size(-1);
  dm.rows = oc::rows_of(ref);
  dm.dev = ref.device();
  check_rows(op, "x", s.x, ref.shape());
  check_rows(op, "y", s.y, ref.shape());
  if (s.post.enabled && !s.x.defined()) oc::fail(op, "post norm enabled without stream x");
  if (s.pre.enabled && !s.y.defined()) oc::fail(op, "pre norm enabled without stream y");
  check_norm(op, "post_norm", s.post, dm.d);
  check_norm(op, "pre_norm", s.pre, dm.d);
  check_norm(op, "input_norm", s.input, dm.d);
  if (s.shift.defined() != s.scale.defined()) oc::fail(op, "shift and scale must both be given or both absent");
  check_mod(op, "shift", s.shift, dm.d, dm.rows, dm);
  check_mod(op, "scale", s.scale, dm.d, dm.rows, dm);
  if (s.shift.defined() && s.shift.size(0) != s.scale.size(0))
    oc::fail(op, oc::desc("shift", s.shift) + " and " + oc::desc("scale", s.scale) + " differ in B");
  oc::f32_like(op, "mean", mean, {3, dm.rows});
  oc::f32_like(op, "rstd", rstd, {3, dm.rows});
  oc::same_device(op, dm.dev,
                  {{"y", &s.y}, {"post_norm.weight", &s.post.weight}, {"post_norm.bias", &s.post.bias},
                   {"pre_norm.weight", &s.pre.weight}, {"pre_norm.bias", &s.pre.bias},
                   {"input_norm.weight", &s.input.weight}, {"input_norm.bias", &s.input.bias},
                   {"shift", &s.shift}, {"scale", &s.scale}, {"mean", &mean}, {"rstd", &rstd}});
  return dm;
}

cpu::SiameseNormPtrs norm_ptrs(const SiameseNorm& n) {
  cpu::SiameseNormPtrs p;
  p.enabled = n.enabled;
  p.weight = n.enabled ? cptr(n.weight) : nullptr;
  p.bias = n.enabled ? cptr(n.bias) : nullptr;
  return p;
}

cpu::SiameseInputRows input_rows(const SiameseInputSpec& s, const Dims& dm) {
  cpu::SiameseInputRows a;
  a.rows = dm.rows;
  a.d = dm.d;
  a.eps = s.eps;
  a.x = cptr(s.x);
  a.y = cptr(s.y);
  a.post = norm_ptrs(s.post);
  a.pre = norm_ptrs(s.pre);
  a.input = norm_ptrs(s.input);
  a.shift = cptr(s.shift);
  a.scale = cptr(s.scale);
  a.mod_ld = s.shift.defined() ? s.shift.strides()[0] : 0;
  a.rows_per_sample = dm.rows / dm.samples;
  return a;
}

}  // namespace

void siamese_input_forward(const SiameseInputSpec& s, const Tensor& u, const Tensor& z, const Tensor& mean,
                           const Tensor& rstd, bool use_saved_stats) {
  const char* op = "siamese_input_forward";
  const Dims dm = check_input(op, s, mean, rstd);
  const Shape& shape = (s.x.defined() ? s.x : s.y).shape();
  check_rows(op, "u", u, shape);
  oc::same_device(op, dm.dev, {{"u", &u}, {"z", &z}});
  const DType act = check_act(op, "z", z, shape);
  if (dm.dev.is_cuda()) {
#ifdef VT_CUDA
    cuda::SiameseInputArgs a = cuda::f32_args(input_rows(s, dm));
    a.act = act;
    cuda::siamese_input_forward(a, mptr(u), z.raw(), mean.f32(), rstd.f32(), use_saved_stats);
    return;
#else
    oc::no_cuda(op);
#endif
  }
  cpu::siamese_input_forward(input_rows(s, dm), mptr(u), z.f32(), mean.f32(), rstd.f32(), use_saved_stats);
}

void siamese_input_backward(const SiameseInputSpec& s, const Tensor& mean, const Tensor& rstd,
                            const SiameseInputGrads& g) {
  const char* op = "siamese_input_backward";
  Dims dm = check_input(op, s, mean, rstd);
  const Shape& shape = (s.x.defined() ? s.x : s.y).shape();
  oc::f32_like(op, "dz", g.dz, shape);
  check_rows(op, "du", g.du, shape);
  check_rows(op, "dy_pass", g.dy_pass, shape);
  if (s.x.defined()) oc::f32_like(op, "dx", g.dx, shape);
  if (s.y.defined()) oc::f32_like(op, "dy", g.dy, shape);
  if (g.dx.defined() && g.du.defined() && g.dx.raw() == g.du.raw()) oc::fail(op, "dx must not alias du");
  for (auto p : {std::make_pair("post_dw", &g.post_dw), std::make_pair("post_db", &g.post_db),
                 std::make_pair("pre_dw", &g.pre_dw), std::make_pair("pre_db", &g.pre_db),
                 std::make_pair("in_dw", &g.in_dw), std::make_pair("in_db", &g.in_db)})
    check_rows(op, p.first, *p.second, {dm.d});
  Dims tmp = dm;
  check_mod(op, "dshift", g.dshift, dm.d, dm.rows, tmp);
  check_mod(op, "dscale", g.dscale, dm.d, dm.rows, tmp);
  if ((g.dshift.defined() || g.dscale.defined()) &&
      (!s.shift.defined() || g.dshift.strides()[0] != s.shift.strides()[0] ||
       g.dscale.strides()[0] != s.scale.strides()[0] || tmp.samples != dm.samples))
    oc::fail(op, "dshift/dscale need shift/scale of the same [B, D] layout (row stride)");
  oc::same_device(op, dm.dev, {{"dz", &g.dz}, {"du", &g.du}, {"dy_pass", &g.dy_pass}, {"dx", &g.dx},
                               {"dy", &g.dy}, {"dshift", &g.dshift}, {"dscale", &g.dscale}});
  cpu::SiameseInputGradPtrs p;
  p.dz = g.dz.f32();
  p.du = cptr(g.du);
  p.dy_pass = cptr(g.dy_pass);
  p.dx = mptr(g.dx);
  p.dy = mptr(g.dy);
  p.post_dw = mptr(g.post_dw), p.post_db = mptr(g.post_db);
  p.pre_dw = mptr(g.pre_dw), p.pre_db = mptr(g.pre_db);
  p.in_dw = mptr(g.in_dw), p.in_db = mptr(g.in_db);
  p.dshift = mptr(g.dshift), p.dscale = mptr(g.dscale);
  if (dm.dev.is_cuda()) {
#ifdef VT_CUDA
    cuda::siamese_input_backward(cuda::f32_args(input_rows(s, dm)), mean.f32(), rstd.f32(), cuda::f32_args(p));
    return;
#else
    oc::no_cuda(op);
#endif
  }
  cpu::siamese_input_backward(input_rows(s, dm), mean.f32(), rstd.f32(), p);
}

namespace {

cpu::SiameseResidualRows residual_rows(const char* op, const SiameseResidualSpec& s) {
  check_act(op, "f", s.f, s.f.shape());
  const Shape& shape = s.f.shape();
  check_rows(op, "u", s.u, shape);
  check_rows(op, "y", s.y, shape);
  cpu::SiameseResidualRows a;
  a.d = s.f.size(-1);
  a.rows = oc::rows_of(s.f);
  Dims dm;
  dm.rows = a.rows;
  check_mod(op, "gate", s.gate, a.d, a.rows, dm);
  if (s.drop_scale.defined()) {
    oc::f32_like(op, "drop_scale", s.drop_scale, {s.drop_scale.numel()});
    if (s.gate.defined() && s.drop_scale.numel() != dm.samples)
      oc::fail(op, oc::desc("drop_scale", s.drop_scale) + " and " + oc::desc("gate", s.gate) + " differ in B");
    if (s.drop_scale.numel() <= 0 || a.rows % s.drop_scale.numel() != 0)
      oc::fail(op, oc::desc("drop_scale", s.drop_scale) + " must have B entries, B dividing the rows");
    dm.samples = s.drop_scale.numel();
  }
  oc::same_device(op, s.f.device(), {{"u", &s.u}, {"y", &s.y}, {"gate", &s.gate}, {"drop_scale", &s.drop_scale}});
  a.u = cptr(s.u);
  a.f = s.f.dtype() == DType::F32 ? s.f.f32() : nullptr;  // a BF16 f goes to CUDA by raw()
  a.y = cptr(s.y);
  a.gate = cptr(s.gate);
  a.gate_ld = s.gate.defined() ? s.gate.strides()[0] : 0;
  a.drop_scale = cptr(s.drop_scale);
  a.rows_per_sample = a.rows / dm.samples;
  a.inv_c = s.inv_c;
  return a;
}

#ifdef VT_CUDA
// The CUDA arguments of residual_rows(): f (and df) in f's dtype.
cuda::SiameseResidualArgs cuda_residual_args(const cpu::SiameseResidualRows& rows, const SiameseResidualSpec& s) {
  cuda::SiameseResidualArgs a = cuda::f32_args(rows);
  a.f = s.f.raw();
  a.act = s.f.dtype();
  return a;
}
#endif

}  // namespace

void siamese_residual_forward(const SiameseResidualSpec& s, const Tensor& x_out, const Tensor& y_out) {
  const char* op = "siamese_residual_forward";
  const cpu::SiameseResidualRows a = residual_rows(op, s);
  if (s.u.defined()) oc::f32_like(op, "x_out", x_out, s.f.shape());
  if (s.y.defined()) oc::f32_like(op, "y_out", y_out, s.f.shape());
  oc::same_device(op, s.f.device(), {{"x_out", &x_out}, {"y_out", &y_out}});
  if (s.f.device().is_cuda()) {
#ifdef VT_CUDA
    cuda::siamese_residual_forward(cuda_residual_args(a, s), s.u.defined() ? x_out.f32() : nullptr,
                                   s.y.defined() ? y_out.f32() : nullptr);
    return;
#else
    oc::no_cuda(op);
#endif
  }
  cpu::siamese_residual_forward(a, s.u.defined() ? x_out.f32() : nullptr, s.y.defined() ? y_out.f32() : nullptr);
}

void siamese_residual_backward(const SiameseResidualSpec& s, const Tensor& dx_out, const Tensor& dy_out,
                               const Tensor& df, const Tensor& dgate) {
  const char* op = "siamese_residual_backward";
  const cpu::SiameseResidualRows a = residual_rows(op, s);
  check_rows(op, "dx_out", dx_out, s.f.shape());
  check_rows(op, "dy_out", dy_out, s.f.shape());
  oc::like(op, "df", df, s.f.shape(), s.f.dtype());
  if (dgate.defined()) {
    if (!s.gate.defined()) oc::fail(op, "dgate given without gate");
    Dims dm;
    dm.rows = a.rows;
    check_mod(op, "dgate", dgate, a.d, a.rows, dm);
    if (dgate.strides()[0] != s.gate.strides()[0] || dgate.size(0) != s.gate.size(0))
      oc::fail(op, oc::desc("dgate", dgate) + " must have the layout of " + oc::desc("gate", s.gate));
  }
  oc::same_device(op, s.f.device(), {{"dx_out", &dx_out}, {"dy_out", &dy_out}, {"df", &df}, {"dgate", &dgate}});
  if (s.f.device().is_cuda()) {
#ifdef VT_CUDA
    cuda::siamese_residual_backward(cuda_residual_args(a, s), cptr(dx_out), cptr(dy_out), df.raw(), mptr(dgate));
    return;
#else
    oc::no_cuda(op);
#endif
  }
  cpu::siamese_residual_backward(a, cptr(dx_out), cptr(dy_out), df.f32(), mptr(dgate));
}

void siamese_residual_input_forward(const SiameseResidualSpec& res, const Tensor& x_out, const Tensor& y_out,
                                    const SiameseInputSpec& next, const Tensor& u, const Tensor& z,
                                    const Tensor& mean, const Tensor& rstd) {
  const char* op = "siamese_residual_input_forward";
  const cpu::SiameseResidualRows ra = residual_rows(op, res);
  const Shape& shape = res.f.shape();
  if (res.u.defined()) oc::f32_like(op, "x_out", x_out, shape);
  if (res.y.defined()) oc::f32_like(op, "y_out", y_out, shape);
  if (next.x.defined() && (!res.u.defined() || next.x.raw() != x_out.raw()))
    oc::fail(op, "the next input's stream x must be the residual's x_out");
  if (next.y.defined() && (!res.y.defined() || next.y.raw() != y_out.raw()))
    oc::fail(op, "the next input's stream y must be the residual's y_out");
  const Dims dm = check_input(op, next, mean, rstd);
  check_rows(op, "u", u, shape);
  const DType act = check_act(op, "z", z, shape);
  if (act != res.f.dtype())
    oc::fail(op, oc::desc("z", z) + " and " + oc::desc("f", res.f) + " must have the same dtype");
  oc::same_device(op, res.f.device(), {{"x_out", &x_out}, {"y_out", &y_out}, {"u", &u}, {"z", &z}, {"mean", &mean}});
  const Tensor none;
  const Tensor& xo = res.u.defined() ? x_out : none;
  const Tensor& yo = res.y.defined() ? y_out : none;
  if (dm.dev.is_cuda()) {
#ifdef VT_CUDA
    cuda::SiameseInputArgs a = cuda::f32_args(input_rows(next, dm));
    a.act = act;
    cuda::siamese_residual_input_forward(cuda_residual_args(ra, res), mptr(xo), mptr(yo), a, mptr(u), z.raw(),
                                         mean.f32(), rstd.f32());
    return;
#else
    oc::no_cuda(op);
#endif
  }
  cpu::siamese_residual_input_forward(ra, mptr(xo), mptr(yo), input_rows(next, dm), mptr(u), z.f32(), mean.f32(),
                                      rstd.f32());
}

// ---------------------------------------------------------------------------
// Unfused oracles.

namespace {

void add_rows(const Tensor& a, const Tensor& b, const Tensor& out) {
  const float *pa = a.f32(), *pb = b.f32();
  float* po = out.f32();
  for (int64_t i = 0, n = out.numel(); i < n; ++i) po[i] = pa[i] + pb[i];
}

Tensor norm_w(const SiameseNorm& n) { return n.weight; }

}  // namespace

void siamese_input_forward_unfused(const SiameseInputSpec& s, const Tensor& u, const Tensor& z,
                                   const Tensor& mean, const Tensor& rstd) {
  const char* op = "siamese_input_forward_unfused";
  const Dims dm = check_input(op, s, mean, rstd);
  if (!dm.dev.is_cpu()) oc::fail(op, "the unfused oracle runs on CPU only");
  const Shape& shape = (s.x.defined() ? s.x : s.y).shape();
  oc::f32_like(op, "z", z, shape);
  Tensor uu = u.defined() ? u : Tensor::empty(shape);
  if (s.x.defined()) {
    if (s.post.enabled) layernorm_forward(s.x, s.post.weight, s.post.bias, s.eps, uu, mean.select(0, 0), rstd.select(0, 0));
    else uu.copy_from(s.x);
  } else {
    uu.zero();
  }
  Tensor sbuf = Tensor::empty(shape);
  if (s.y.defined()) {
    Tensor v = Tensor::empty(shape);
    if (s.pre.enabled) layernorm_forward(s.y, s.pre.weight, s.pre.bias, s.eps, v, mean.select(0, 1), rstd.select(0, 1));
    else v.copy_from(s.y);
    add_rows(uu, v, sbuf);
  } else {
    sbuf.copy_from(uu);
  }
  if (s.input.enabled) layernorm_forward(sbuf, s.input.weight, s.input.bias, s.eps, z, mean.select(0, 2), rstd.select(0, 2));
  else Tensor(z).copy_from(sbuf);
  if (s.shift.defined()) {
    const int64_t d = dm.d, rps = dm.rows / dm.samples, ld = s.shift.strides()[0];
    float* pz = z.f32();
    for (int64_t r = 0; r < dm.rows; ++r)
      for (int64_t j = 0; j < d; ++j)
        pz[r * d + j] = pz[r * d + j] * (1.0f + s.scale.f32()[(r / rps) * ld + j]) + s.shift.f32()[(r / rps) * ld + j];
  }
}

void siamese_input_backward_unfused(const SiameseInputSpec& s, const Tensor& mean, const Tensor& rstd,
                                    const SiameseInputGrads& g) {
  const char* op = "siamese_input_backward_unfused";
  const Dims dm = check_input(op, s, mean, rstd);
  if (!dm.dev.is_cpu()) oc::fail(op, "the unfused oracle runs on CPU only");
  const Shape& shape = (s.x.defined() ? s.x : s.y).shape();
  const int64_t d = dm.d, rows = dm.rows;
  // Recompute u, s, n (the oracle's own statistics are bit-identical to the
  // saved ones for the same inputs).
  SiameseInputSpec plain = s;
  plain.shift = Tensor();
  plain.scale = Tensor();
  SiameseInputSpec sonly = plain;
  sonly.input.enabled = false;
  Tensor u = Tensor::empty(shape), sb = Tensor::empty(shape), n = Tensor::empty(shape);
  Tensor m2 = Tensor::empty({3, rows}), r2 = Tensor::empty({3, rows});
  siamese_input_forward_unfused(sonly, u, sb, m2, r2);
  siamese_input_forward_unfused(plain, Tensor(), n, m2, r2);

  Tensor dn = Tensor::empty(shape);
  {
    const float* dz = g.dz.f32();
    float* pdn = dn.f32();
    const int64_t rps = rows / dm.samples;
    const int64_t ld = s.shift.defined() ? s.shift.strides()[0] : 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < d; ++j)
        pdn[r * d + j] = s.shift.defined() ? dz[r * d + j] * (1.0f + s.scale.f32()[(r / rps) * ld + j]) : dz[r * d + j];
    if (s.shift.defined()) {
      for (int64_t b = 0; b < dm.samples; ++b)
        for (int64_t j = 0; j < d; ++j) {
          double sh = 0, sc = 0;
          for (int64_t r = b * rps; r < (b + 1) * rps; ++r) {
            sh += dz[r * d + j];
            sc += static_cast<double>(dz[r * d + j] * n.f32()[r * d + j]);
          }
          if (g.dshift.defined()) g.dshift.f32()[b * g.dshift.strides()[0] + j] = static_cast<float>(sh);
          if (g.dscale.defined()) g.dscale.f32()[b * g.dscale.strides()[0] + j] = static_cast<float>(sc);
        }
    }
  }
  Tensor ds = Tensor::empty(shape);
  if (s.input.enabled)
    layernorm_backward(dn, sb, norm_w(s.input), mean.select(0, 2), rstd.select(0, 2), ds,
                       s.input.weight.defined() ? g.in_dw : Tensor(), s.input.bias.defined() ? g.in_db : Tensor());
  else
    ds.copy_from(dn);
  if (s.x.defined()) {
    Tensor dut = Tensor::empty(shape);
    if (g.du.defined()) add_rows(g.du, ds, dut);
    else dut.copy_from(ds);
    if (s.post.enabled)
      layernorm_backward(dut, s.x, norm_w(s.post), mean.select(0, 0), rstd.select(0, 0), g.dx,
                         s.post.weight.defined() ? g.post_dw : Tensor(), s.post.bias.defined() ? g.post_db : Tensor());
    else
      Tensor(g.dx).copy_from(dut);
  }
  if (s.y.defined()) {
    if (g.dy_pass.defined()) {
      if (g.dy.raw() != g.dy_pass.raw()) Tensor(g.dy).copy_from(g.dy_pass);
    } else {
      Tensor(g.dy).zero();
    }
    if (s.pre.enabled)
      layernorm_backward_accumulate(ds, s.y, norm_w(s.pre), mean.select(0, 1), rstd.select(0, 1), g.dy,
                                    s.pre.weight.defined() ? g.pre_dw : Tensor(), s.pre.bias.defined() ? g.pre_db : Tensor());
    else
      add_rows(g.dy, ds, g.dy);
  }
}

}  // namespace vt
