#include "backbone/block.h"

#include <cmath>

#include "core/philox.h"
#include "kernels/drop_path.h"
#include "kernels/elementwise.h"
#include "kernels/layernorm.h"

namespace vt {

namespace {
void ensure(Tensor& t, const Shape& s) {
  if (!t.defined() || t.shape() != s) t = Tensor::empty(s);
}
bool siamese(const BackboneConfig& c) { return c.scheme == NormScheme::Siamese; }
bool has_x(const BackboneConfig& c) { return c.scheme != NormScheme::Pre; }
bool has_y(const BackboneConfig& c) { return c.scheme != NormScheme::Post; }
}  // namespace

void BlockScratch::plan(const BackboneConfig& cfg, int64_t B, int64_t T) {
  const int64_t D = cfg.dim;
  mod.plan(B, T, D, cfg.hidden());
  for (Tensor* t : {&u, &f, &dz, &df, &dr, &gx_alt}) ensure(*t, {B, T, D});
  if (cfg.conditioned()) {
    ensure(dmod, {B, 6 * D});
    ensure(d_silu, {B, D});
  }
}

Block::Norm Block::add_norm(ParamStore& store, const std::string& name, bool enabled, bool affine) {
  Norm n;
  n.enabled = enabled;
  n.affine = enabled && affine;
  if (n.affine) {
    n.w = store.add(name + ".weight", {cfg_.dim}, ParamInit::ones(), false);
    n.b = store.add(name + ".bias", {cfg_.dim}, ParamInit::zeros(), false);
  }
  return n;
}

Block::Block(ParamStore& store, const BackboneConfig& cfg, int64_t index)
    : cfg_(cfg), store_(&store), index_(index) {
  const std::string p = "blocks." + std::to_string(index) + ".";
  const bool dit = cfg.variant == ModelVariant::DiT;
  c_ = (siamese(cfg) && cfg.depth_scaling) ? static_cast<float>(std::sqrt(2.0 * (index + 1))) : 1.0f;
  drop_rate_ = cfg.drop_path.empty() ? 0.0f : cfg.drop_path[index];
  // Registration order follows the released models' module order.
  for (int k = 0; k < 2; ++k) {
    const std::string ks = std::to_string(k + 1);
    Sub& s = sub_[k];
    if (siamese(cfg)) {
      s.post = add_norm(store, p + (dit ? "postnorm" : "post_norm") + ks, true, true);
      s.pre = add_norm(store, p + (dit ? "prenorm" : "pre_norm") + ks, true, true);
      s.input = add_norm(store, p + "input_norm" + ks, cfg.normalized_input, !dit);
    } else if (cfg.scheme == NormScheme::Pre) {
      s.input = add_norm(store, p + "norm" + ks, true, !dit);
    } else {
      s.after = add_norm(store, p + "norm" + ks, true, !dit);
    }
  }
  // timm ViT: trunc_normal(.02) Linear weights; DiT: xavier_uniform.
  const ParamInit wi = dit ? ParamInit::xavier_uniform() : ParamInit::trunc_normal(0.02f);
  attn_ = Attention(store, p, cfg.dim, cfg.heads, cfg.qkv_bias, wi);
  mlp_ = Mlp(store, p, cfg.dim, cfg.hidden(), cfg.gelu, wi);
  if (dit) ada_ = Linear(store, p + "adaLN_modulation.1", cfg.dim, 6 * cfg.dim, true, ParamInit::zeros());
}

void Block::plan(int64_t B, int64_t T) {
  B_ = B, T_ = T;
  const int64_t D = cfg_.dim, R = B * T;
  attn_.plan(B, T);
  mlp_.plan(B, T);
  for (Sub& s : sub_) {
    ensure(s.z, {B, T, D});
    ensure(s.mean, {3, R});
    ensure(s.rstd, {3, R});
    if (cfg_.conditioned()) ensure(s.f, {B, T, D});
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
  if (has_x(cfg_)) sp.x = io.x[k];
  if (has_y(cfg_)) sp.y = io.y[k];
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
  for (int k = 0; k < 2; ++k) sub_forward(k, io, training, seed, step, s);
}

void Block::sub_forward(int k, const BlockIO& io, bool training, uint64_t seed, uint64_t step, BlockScratch& s) {
  Sub& sb = sub_[k];
  const SiameseInputSpec sp = input_spec(k, io);
  siamese_input_forward(sp, siamese(cfg_) ? s.u : Tensor(), sb.z, sb.mean, sb.rstd);
  const Tensor& f = cfg_.conditioned() ? sb.f : s.f;
  if (k == 0) attn_.forward(sb.z, f);
  else mlp_.forward(sb.z, f);

  SiameseResidualSpec rs;
  rs.f = f;
  rs.inv_c = 1.0f / c_;
  if (cfg_.conditioned()) rs.gate = mod_chunk(mod_, 3 * k + 2);
  if (drop_rate_ > 0.0f) {
    if (training) drop_path_scales(drop_rate_, seed, philox_stream(step, index_, k), sb.drop);
    else sb.drop.fill(1.0f);
    rs.drop_scale = sb.drop;
  }
  switch (cfg_.scheme) {
    case NormScheme::Siamese:
      rs.u = s.u, rs.y = io.y[k];
      siamese_residual_forward(rs, io.x[k + 1], io.y[k + 1]);
      break;
    case NormScheme::Pre:
      rs.y = io.y[k];
      siamese_residual_forward(rs, Tensor(), io.y[k + 1]);
      break;
    case NormScheme::Post: {
      rs.u = io.x[k];
      siamese_residual_forward(rs, sb.r, Tensor());
      const SiameseNorm n = norm_of(sb.after);
      layernorm_forward(sb.r, n.weight, n.bias, cfg_.eps, io.x[k + 1], sb.r_mean, sb.r_rstd);
      break;
    }
  }
}

void Block::backward(const BlockIO& io, const Tensor& silu_c, Tensor& gx, const Tensor& gy,
                     const Tensor& d_silu_acc, BlockScratch& s) {
  for (int k = 1; k >= 0; --k) sub_backward(k, io, gx, gy, s);
  if (cfg_.conditioned()) {
    ada_.backward(s.dmod, silu_c, s.d_silu);
    axpy(1.0f, s.d_silu, d_silu_acc);  // an op, not a host loop: the tensors may live on the GPU
  }
}

void Block::sub_backward(int k, const BlockIO& io, Tensor& gx, const Tensor& gy, BlockScratch& s) {
  Sub& sb = sub_[k];
  // Gradient reaching the post stream's base u (= dx_out, or dr for Post-Norm).
  Tensor du;
  if (cfg_.scheme == NormScheme::Siamese) du = gx;
  if (cfg_.scheme == NormScheme::Post) {
    const SiameseNorm n = norm_of(sb.after);
    layernorm_backward(gx, sb.r, n.weight, sb.r_mean, sb.r_rstd, s.dr,
                       n.weight.defined() ? store_->grad(sb.after.w) : Tensor(),
                       n.bias.defined() ? store_->grad(sb.after.b) : Tensor());
    du = s.dr;
  }
  SiameseResidualSpec rs;
  rs.f = cfg_.conditioned() ? sb.f : s.f;
  rs.inv_c = 1.0f / c_;
  if (cfg_.conditioned()) rs.gate = mod_chunk(mod_, 3 * k + 2);
  if (drop_rate_ > 0.0f) rs.drop_scale = sb.drop;
  siamese_residual_backward(rs, du, has_y(cfg_) ? gy : Tensor(), s.df,
                            cfg_.conditioned() ? mod_chunk(s.dmod, 3 * k + 2) : Tensor());
  if (k == 0) attn_.backward(s.df, sb.z, s.dz, s.mod);
  else mlp_.backward(s.df, sb.z, s.dz, s.mod);

  const SiameseInputSpec sp = input_spec(k, io);
  SiameseInputGrads g;
  g.dz = s.dz;
  g.du = du;
  if (has_y(cfg_)) g.dy_pass = gy, g.dy = gy;
  if (has_x(cfg_)) g.dx = s.gx_alt;
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
  if (has_x(cfg_)) std::swap(gx, s.gx_alt);
}

int64_t Block::saved_bytes() const {
  int64_t n = attn_.saved_bytes() + mlp_.saved_bytes() + static_cast<int64_t>(mod_.defined() ? mod_.nbytes() : 0);
  for (const Sub& s : sub_)
    for (const Tensor* t : {&s.z, &s.mean, &s.rstd, &s.f, &s.r, &s.r_mean, &s.r_rstd, &s.drop})
      if (t->defined()) n += static_cast<int64_t>(t->nbytes());
  return n;
}

}  // namespace vt
