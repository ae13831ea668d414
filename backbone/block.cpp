#include "backbone/block.h"

#include <cmath>

#include "core/philox.h"
#include "backbone/workspace.h"
#include "kernels/drop_path.h"
#include "kernels/elementwise.h"
#include "kernels/layernorm.h"

namespace vt {


void BlockScratch::plan(const BackboneConfig& cfg, int64_t B, int64_t T, Device dev, DType act) {
  auto ensure = [&](Tensor& t, const Shape& s) { ensure_workspace(t, s, dev); };
  const int64_t D = cfg.dim;
  mod.plan(B, T, D, cfg.hidden(), cfg.scheme == NormScheme::Hybrid, dev, act);
  for (Tensor* t : {&u, &dz, &dr, &gx_alt}) ensure(*t, {B, T, D});
  for (Tensor* t : {&f, &df}) ensure_workspace(*t, {B, T, D}, dev, act);
  if (cfg.conditioned()) {
    ensure(dmod, {B, 6 * D});
    ensure(d_silu, {B, D});
  }
}

Block::Norm Block::add_norm(ParamStore& store, const std::string& name, bool enabled, bool affine) {
  Norm n;
  n.enabled = enabled;
  n.affine = enabled && affine;
  n.name = name;
  if (n.affine) {
    n.w = store.add(name + ".weight", {cfg_.dim}, ParamInit::ones(), false);
    n.b = store.add(name + ".bias", {cfg_.dim}, ParamInit::zeros(), false);
  }
  return n;
}

Block::Block(ParamStore& store, const BackboneConfig& cfg, int64_t index)
    : cfg_(cfg), scheme_(cfg.block_scheme(index)), store_(&store), index_(index), after_eps_(cfg.eps) {
  const std::string p = "blocks." + std::to_string(index) + ".";
  const bool dit = cfg.variant == ModelVariant::DiT;
  if (scheme_ == NormScheme::Siamese && cfg.depth_scaling) c_ = static_cast<float>(std::sqrt(2.0 * (index + 1)));
  if (scheme_ == NormScheme::DeepNorm) {
    // LN(alpha x + o) = LN'(x + o / alpha) with LN' using eps / alpha^2:
    // the same map through the shared x = u + o / c residual kernel.
    const double alpha = cfg.deepnorm_alpha();
    c_ = static_cast<float>(alpha);
    after_eps_ = static_cast<float>(cfg.eps / (alpha * alpha));
  }
  if (scheme_ == NormScheme::SpanNorm) {
    span_ = true;
    span_alpha_ = static_cast<float>(cfg.spannorm_scale());
  }
  drop_rate_ = cfg.drop_path.empty() ? 0.0f : cfg.drop_path[index];
  // Registration order follows the released models' module order.
  for (int k = 0; k < 2; ++k) {
    const std::string ks = std::to_string(k + 1);
    Sub& s = sub_[k];
    switch (scheme_) {
      case NormScheme::Siamese:
        s.post = add_norm(store, p + (dit ? "postnorm" : "post_norm") + ks, true, true);
        s.pre = add_norm(store, p + (dit ? "prenorm" : "pre_norm") + ks, true, true);
        s.input = add_norm(store, p + "input_norm" + ks, cfg.normalized_input, !dit);
        s.in_x = s.in_y = s.out_x = s.out_y = true;
        break;
      case NormScheme::Pre:
        s.input = add_norm(store, p + "norm" + ks, true, !dit);
        s.in_y = s.out_y = true;
        break;
      case NormScheme::Post:
      case NormScheme::DeepNorm:
      case NormScheme::SpanNorm:  // the Post chain inside the span (x_in reads y[0] first)
        s.after = add_norm(store, p + "norm" + ks, true, !dit);
        s.in_x = s.out_x = true;
        break;
      case NormScheme::ResiDual:
        s.after = add_norm(store, p + "norm" + ks, true, !dit);
        s.in_x = s.out_x = s.out_y = true;
        break;
      case NormScheme::Hybrid:
        // Attention: no block norm (QKV-Norm inside); FFN: x' = norm2(x) is
        // both F's input and the residual's base.
        if (k == 1) s.post = add_norm(store, p + "norm2", true, !dit);
        s.in_x = s.out_x = true;
        break;
      case NormScheme::MixLN: break;  // block_scheme() never returns it
    }
  }
  // timm ViT: trunc_normal(.02) Linear weights; DiT: xavier_uniform;
  // DeepNet: xavier_normal, gain beta on v, proj, fc1, fc2 and 1 on q, k.
  const ParamInit wi = dit ? ParamInit::xavier_uniform() : ParamInit::trunc_normal(0.02f);
  ParamInit qkv_init = wi, out_init = wi;
  if (scheme_ == NormScheme::DeepNorm) {
    const float beta = static_cast<float>(cfg.deepnorm_beta());
    qkv_init = ParamInit::xavier_normal({1.0f, 1.0f, beta});
    out_init = ParamInit::xavier_normal({beta});
  }
  attn_ = Attention(store, p, cfg.dim, cfg.heads, cfg.qkv_bias, qkv_init, out_init, scheme_ == NormScheme::Hybrid,
                    cfg.eps);
  mlp_ = Mlp(store, p, cfg.dim, cfg.hidden(), cfg.gelu, out_init, out_init);
  if (dit) ada_ = Linear(store, p + "adaLN_modulation.1", cfg.dim, 6 * cfg.dim, true, ParamInit::zeros());
}

void Block::plan(int64_t B, int64_t T) {
  const Device dev = store_->device();
  auto ensure = [&](Tensor& t, const Shape& s) { ensure_workspace(t, s, dev); };
  B_ = B, T_ = T;
  const int64_t D = cfg_.dim, R = B * T;
  const DType act = activation_dtype(*store_);
  attn_.plan(B, T);
  mlp_.plan(B, T);
  for (Sub& s : sub_) {
    ensure_workspace(s.z, {B, T, D}, dev, act);
    ensure(s.mean, {3, R});
    ensure(s.rstd, {3, R});
    if (cfg_.conditioned()) ensure_workspace(s.f, {B, T, D}, dev, act);
    if (s.after.enabled) {
      ensure(s.r, {B, T, D});
      ensure(s.r_mean, {R});
      ensure(s.r_rstd, {R});
    }
    if (drop_rate_ > 0.0f) ensure(s.drop, {B});
  }
  if (cfg_.conditioned()) ensure(mod_, {B, 6 * D});
}

Tensor Block::mod_chunk(const Tensor& m, int i) const { return m.slice(1, i * cfg_.dim, (i + 1) * cfg_.dim); }

SiameseNorm Block::norm_of(const Norm& n) const {
  SiameseNorm s;
  s.enabled = n.enabled;
  if (n.affine) s.weight = store_->value(n.w), s.bias = store_->value(n.b);
  return s;
}

SiameseInputSpec Block::input_spec(int k, const BlockIO& io) const {
  const Sub& s = sub_[k];
  SiameseInputSpec sp;
  sp.eps = cfg_.eps;
  if (s.in_x) sp.x = x_in(k, io);
  if (s.in_y) sp.y = io.y[k];
  sp.post = norm_of(s.post);
  sp.pre = norm_of(s.pre);
  sp.input = norm_of(s.input);
  if (cfg_.conditioned()) {
    sp.shift = mod_chunk(mod_, 3 * k + 0);
    sp.scale = mod_chunk(mod_, 3 * k + 1);
  }
  return sp;
}

void Block::forward(const BlockIO& io, const Tensor& silu_c, bool training, uint64_t seed, uint64_t step,
                    BlockScratch& s) {
  if (cfg_.conditioned()) ada_.forward(silu_c, mod_);
  // Sublayer 0's residual and sublayer 1's input map run as one pass over the
  // rows where nothing sits between them (kernels/siamese.h).
  const bool fuse = fuses_residual_input();
  sub_forward(0, io, training, seed, step, s, /*input_done=*/false, /*fuse_next=*/fuse);
  sub_forward(1, io, training, seed, step, s, /*input_done=*/fuse, /*fuse_next=*/false);
  if (span_) {
    Sub& s0 = sub_[0];
    if (drop_rate_ > 0.0f) {
      if (training)
        draw_drop(0, seed, step, s0.drop);
      else s0.drop.fill(1.0f);
    }
    siamese_residual_forward(span_spec(io), io.y[2], Tensor());
  }
}

void Block::draw_drop(int k, uint64_t seed, uint64_t step, const Tensor& scales) const {
  if (step_source_.defined())
    drop_path_scales_at(drop_rate_, seed, step_source_, static_cast<uint64_t>(index_), static_cast<uint64_t>(k), scales,
                        sample_offset_, sample_stride_);
  else
    drop_path_scales(drop_rate_, seed, philox_stream(step, index_, k), scales, sample_offset_, sample_stride_);
}

SiameseResidualSpec Block::span_spec(const BlockIO& io) const {
  SiameseResidualSpec rs;
  rs.u = io.y[0];
  rs.f = io.x[2];
  rs.inv_c = span_alpha_;
  if (cfg_.conditioned()) rs.gate = mod_chunk(mod_, 5);
  if (drop_rate_ > 0.0f) rs.drop_scale = sub_[0].drop;
  return rs;
}

bool Block::fuses_residual_input() const {
  // Not across a norm after the add (Post, DeepNorm, ResiDual) or SpanNorm's
  // chain; the input of sublayer 1 must read only streams sublayer 0 writes.
  const Sub &a = sub_[0], &b = sub_[1];
  return !span_ && !a.after.enabled && (!b.in_x || a.out_x) && (!b.in_y || a.out_y);
}

void Block::sub_forward(int k, const BlockIO& io, bool training, uint64_t seed, uint64_t step, BlockScratch& s,
                        bool input_done, bool fuse_next) {
  Sub& sb = sub_[k];
  const bool base_is_u = sb.post.enabled;  // else the x residual's base is x itself
  if (!input_done) siamese_input_forward(input_spec(k, io), base_is_u ? s.u : Tensor(), sb.z, sb.mean, sb.rstd);
  const Tensor& f = cfg_.conditioned() ? sb.f : s.f;
  if (k == 0) attn_.forward(sb.z, f, s.mod);
  else mlp_.forward(sb.z, f);

  SiameseResidualSpec rs;
  rs.f = f;
  rs.inv_c = 1.0f / c_;
  if (sub_gated(k)) rs.gate = mod_chunk(mod_, 3 * k + 2);
  if (drop_rate_ > 0.0f && !span_) {
    if (training)
      draw_drop(k, seed, step, sb.drop);
    else sb.drop.fill(1.0f);
    rs.drop_scale = sb.drop;
  }
  if (sb.out_x) rs.u = base_is_u ? s.u : x_in(k, io);
  if (sb.out_y) rs.y = io.y[k];
  const Tensor x_out = !sb.out_x ? Tensor() : sb.after.enabled ? sb.r : io.x[k + 1];
  const Tensor y_out = sb.out_y ? io.y[k + 1] : Tensor();
  if (fuse_next) {  // the residual, then sublayer k + 1's input map
    Sub& nx = sub_[k + 1];
    siamese_residual_input_forward(rs, x_out, y_out, input_spec(k + 1, io), nx.post.enabled ? s.u : Tensor(), nx.z,
                                   nx.mean, nx.rstd);
    return;
  }
  siamese_residual_forward(rs, x_out, y_out);
  if (sb.after.enabled) {
    const SiameseNorm n = norm_of(sb.after);
    layernorm_forward(sb.r, n.weight, n.bias, after_eps_, io.x[k + 1], sb.r_mean, sb.r_rstd);
  }
}

void Block::backward(const BlockIO& io, const Tensor& silu_c, Tensor& gx, const Tensor& gy,
                     const Tensor& d_silu_acc, BlockScratch& s) {
  if (span_)  // gx := d b = d y[2] * alpha * gate_mlp * drop (b feeds nothing else); dgate_mlp
    siamese_residual_backward(span_spec(io), gy, Tensor(), gx, cfg_.conditioned() ? mod_chunk(s.dmod, 5) : Tensor());
  for (int k = 1; k >= 0; --k) sub_backward(k, io, gx, gy, s);
  if (span_) {  // gx is now d y[0] through the Post chain; add it to the identity path
    axpy(1.0f, gx, gy);
    gx.zero();  // x[0] is not read
  }
  if (cfg_.conditioned()) {
    ada_.backward(s.dmod, silu_c, s.d_silu);
    axpy(1.0f, s.d_silu, d_silu_acc);  // an op, not a host loop: the tensors may live on the GPU
  }
}

void Block::sub_backward(int k, const BlockIO& io, Tensor& gx, const Tensor& gy, BlockScratch& s) {
  Sub& sb = sub_[k];
  // Gradient reaching the x residual's base u (= dx_out, or dr through the
  // norm after the add).
  Tensor du;
  if (sb.out_x) du = gx;
  if (sb.after.enabled) {
    const SiameseNorm n = norm_of(sb.after);
    layernorm_backward(gx, sb.r, n.weight, sb.r_mean, sb.r_rstd, s.dr,
                       n.weight.defined() ? store_->grad(sb.after.w) : Tensor(),
                       n.bias.defined() ? store_->grad(sb.after.b) : Tensor());
    du = s.dr;
  }
  SiameseResidualSpec rs;
  rs.f = cfg_.conditioned() ? sb.f : s.f;
  rs.inv_c = 1.0f / c_;
  if (sub_gated(k)) rs.gate = mod_chunk(mod_, 3 * k + 2);
  if (drop_rate_ > 0.0f && !span_) rs.drop_scale = sb.drop;
  // A y stream the input does not read (ResiDual's dual) passes gy unchanged.
  siamese_residual_backward(rs, du, sb.out_y ? gy : Tensor(), s.df,
                            sub_gated(k) ? mod_chunk(s.dmod, 3 * k + 2) : Tensor());
  if (k == 0) attn_.backward(s.df, sb.z, s.dz, s.mod);
  else mlp_.backward(s.df, sb.z, s.dz, s.mod);

  const SiameseInputSpec sp = input_spec(k, io);
  SiameseInputGrads g;
  g.dz = s.dz;
  g.du = du;
  if (sb.in_y) g.dy_pass = gy, g.dy = gy;
  if (sb.in_x) g.dx = s.gx_alt;
  auto pg = [&](const Norm& n, Tensor& w, Tensor& b) {
    if (n.affine) w = store_->grad(n.w), b = store_->grad(n.b);
  };
  pg(sb.post, g.post_dw, g.post_db);
  pg(sb.pre, g.pre_dw, g.pre_db);
  pg(sb.input, g.in_dw, g.in_db);
  if (cfg_.conditioned()) {
    g.dshift = mod_chunk(s.dmod, 3 * k + 0);
    g.dscale = mod_chunk(s.dmod, 3 * k + 1);
  }
  siamese_input_backward(sp, sb.mean, sb.rstd, g);
  if (sb.in_x) std::swap(gx, s.gx_alt);
}

std::vector<std::pair<std::string, double>> Block::norm_scales() const {
  std::vector<std::pair<std::string, double>> r;
  auto mean_abs = [&](ParamId id) {
    const Tensor w = store_->value(id).to(Device::cpu());  // logging only
    const float* p = w.f32();
    double a = 0;
    for (int64_t i = 0; i < w.numel(); ++i) a += std::fabs(static_cast<double>(p[i]));
    return a / static_cast<double>(w.numel());
  };
  for (const Sub& s : sub_)
    for (const Norm* n : {&s.post, &s.pre, &s.input, &s.after})
      if (n->affine) r.emplace_back(n->name, mean_abs(n->w));
  for (ParamId id : attn_.norm_weights()) {
    const std::string& name = store_->info(id).name;
    r.emplace_back(name.substr(0, name.size() - std::string(".weight").size()), mean_abs(id));
  }
  return r;
}

std::vector<Tensor*> Block::saved_tensors() {
  std::vector<Tensor*> r{&mod_};
  for (Sub& s : sub_)
    for (Tensor* t : {&s.z, &s.mean, &s.rstd, &s.f, &s.r, &s.r_mean, &s.r_rstd, &s.drop}) r.push_back(t);
  for (const std::vector<Tensor*>& m : {attn_.saved_tensors(), mlp_.saved_tensors()})
    r.insert(r.end(), m.begin(), m.end());
  r.push_back(ada_.saved_tensor());
  return r;
}

}  // namespace vt
