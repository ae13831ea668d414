#include "backbone/backbone.h"

#include <stdexcept>

#include "kernels/activation.h"
#include "kernels/elementwise.h"

namespace vt {

namespace {
void ensure(Tensor& t, const Shape& s) {
  if (!t.defined() || t.shape() != s) t = Tensor::empty(s);
}
}  // namespace

Backbone::FinalNorm Backbone::add_final(const std::string& name, bool affine) {
  FinalNorm n;
  n.enabled = true;
  n.affine = affine;
  if (affine) {
    n.w = store_->add(name + ".weight", {cfg_.dim}, ParamInit::ones(), false);
    n.b = store_->add(name + ".bias", {cfg_.dim}, ParamInit::zeros(), false);
  }
  return n;
}

Backbone::Backbone(ParamStore& store, const BackboneConfig& cfg) : cfg_(cfg), store_(&store) {
  cfg_.validate();
  for (int64_t l = 0; l < cfg_.depth; ++l) blocks_.push_back(std::make_unique<Block>(store, cfg_, l));
  const bool dit = cfg_.variant == ModelVariant::DiT;
  if (cfg_.scheme == NormScheme::Siamese) {
    final_kernel_ = true;
    if (!dit) {
      // As released: the module named pre_norm normalises x, post_norm y.
      fx_ = add_final("pre_norm", true);
      fy_ = add_final("post_norm", true);
      fin_ = add_final("final_norm", true);
    } else {
      fx_ = add_final("postnorm", true);
      fy_ = add_final("prenorm", true);
    }
  } else if (cfg_.scheme == NormScheme::Pre && !dit) {
    final_kernel_ = true;
    fin_ = add_final("norm", true);
  }
}

void Backbone::plan(int64_t B, int64_t T) {
  if (B == B_ && T == T_ && !xs_.empty()) return;
  B_ = B, T_ = T;
  const int64_t D = cfg_.dim, S = 2 * cfg_.depth + 1;
  xs_.assign(S, Tensor());
  ys_.assign(S, Tensor());
  for (int64_t i = 0; i < S; ++i) {
    if (cfg_.scheme != NormScheme::Pre) xs_[i] = Tensor::empty({B, T, D});
    if (cfg_.scheme != NormScheme::Post) ys_[i] = Tensor::empty({B, T, D});
  }
  for (auto& b : blocks_) b->plan(B, T);
  scratch_.plan(cfg_, B, T);
  ensure(fmean_, {3, B * T});
  ensure(frstd_, {3, B * T});
  ensure(gx_, {B, T, D});
  ensure(gy_, {B, T, D});
  if (cfg_.conditioned()) {
    ensure(c_, {B, D});
    ensure(silu_c_, {B, D});
    ensure(d_silu_, {B, D});
  }
  has_forward_ = false;
}

BlockIO Backbone::io(int64_t l) const {
  BlockIO o;
  for (int i = 0; i < 3; ++i) o.x[i] = xs_[2 * l + i], o.y[i] = ys_[2 * l + i];
  return o;
}

SiameseInputSpec Backbone::final_spec() const {
  SiameseInputSpec sp;
  sp.eps = cfg_.eps;
  const int64_t L2 = 2 * cfg_.depth;
  if (xs_[L2].defined()) sp.x = xs_[L2];
  if (ys_[L2].defined()) sp.y = ys_[L2];
  auto conv = [&](const FinalNorm& n) {
    SiameseNorm s;
    s.enabled = n.enabled;
    if (n.affine) s.weight = store_->value(n.w), s.bias = store_->value(n.b);
    return s;
  };
  sp.post = conv(fx_);
  sp.pre = conv(fy_);
  sp.input = conv(fin_);
  return sp;
}

void Backbone::forward(const Tensor& h, const Tensor& c, const Tensor& out, bool training, uint64_t seed,
                       uint64_t step) {
  const char* op = "Backbone::forward";
  if (!h.defined() || h.dim() != 3 || h.size(2) != cfg_.dim || h.dtype() != DType::F32)
    throw std::invalid_argument(std::string(op) + ": h " + (h.defined() ? h.str() : "(undefined)") +
                                " must be F32 [B, T, " + std::to_string(cfg_.dim) + "]");
  const int64_t B = h.size(0), T = h.size(1);
  if (!out.defined() || out.shape() != h.shape())
    throw std::invalid_argument(std::string(op) + ": out " + (out.defined() ? out.str() : "(undefined)") +
                                " must have the shape of h " + shape_str(h.shape()));
  if (cfg_.conditioned() != c.defined())
    throw std::invalid_argument(std::string(op) + ": conditioning c must be " +
                                (cfg_.conditioned() ? "given [B, D] for DiT" : "undefined for DeiT"));
  if (c.defined() && c.shape() != Shape{B, cfg_.dim})
    throw std::invalid_argument(std::string(op) + ": c " + c.str() + " must be [" + std::to_string(B) + ", " +
                                std::to_string(cfg_.dim) + "]");
  plan(B, T);
  if (xs_[0].defined()) xs_[0].copy_from(h);
  if (ys_[0].defined()) ys_[0].copy_from(h);
  if (cfg_.conditioned()) {
    c_.copy_from(c);
    activation_forward(Activation::SiLU, c_, silu_c_);
  }
  for (int64_t l = 0; l < cfg_.depth; ++l) blocks_[l]->forward(io(l), silu_c_, training, seed, step, scratch_);
  const int64_t L2 = 2 * cfg_.depth;
  if (final_kernel_) {
    siamese_input_forward(final_spec(), Tensor(), out, fmean_, frstd_);
  } else {
    Tensor o = out;
    o.copy_from(xs_[L2].defined() ? xs_[L2] : ys_[L2]);
  }
  has_forward_ = true;
}

void Backbone::backward(const Tensor& dout, const Tensor& dh, const Tensor& dc) {
  const char* op = "Backbone::backward";
  if (!has_forward_) throw std::logic_error(std::string(op) + ": no forward to differentiate");
  const Shape sh{B_, T_, cfg_.dim};
  auto need = [&](const char* name, const Tensor& t, const Shape& s) {
    if (!t.defined() || t.shape() != s || t.dtype() != DType::F32 || !t.is_contiguous())
      throw std::invalid_argument(std::string(op) + ": " + name + " " + (t.defined() ? t.str() : "(undefined)") +
                                  " must be contiguous F32 " + shape_str(s));
  };
  need("dout", dout, sh);
  need("dh", dh, sh);
  if (cfg_.conditioned()) need("dc", dc, {B_, cfg_.dim});

  const bool hx = cfg_.scheme != NormScheme::Pre, hy = cfg_.scheme != NormScheme::Post;
  if (final_kernel_) {
    const SiameseInputSpec sp = final_spec();
    SiameseInputGrads g;
    g.dz = dout;
    if (hx) g.dx = gx_;
    if (hy) g.dy = gy_;
    auto pg = [&](const FinalNorm& n, Tensor& w, Tensor& b) {
      if (n.affine) w = store_->grad(n.w), b = store_->grad(n.b);
    };
    pg(fx_, g.post_dw, g.post_db);
    pg(fy_, g.pre_dw, g.pre_db);
    pg(fin_, g.in_dw, g.in_db);
    siamese_input_backward(sp, fmean_, frstd_, g);
  } else {
    (hx ? gx_ : gy_).copy_from(dout);
  }
  if (cfg_.conditioned()) d_silu_.zero();
  for (int64_t l = cfg_.depth - 1; l >= 0; --l) blocks_[l]->backward(io(l), silu_c_, gx_, gy_, d_silu_, scratch_);

  // Ops, not host loops: dh may live on the GPU (every scheme has a stream).
  if (hx && hy) {
    add(gx_, gy_, dh);
  } else {
    Tensor out = dh;  // a handle on dh's storage
    out.copy_from(hx ? gx_ : gy_);
  }
  if (cfg_.conditioned()) activation_backward(Activation::SiLU, d_silu_, c_, dc);
}

int64_t Backbone::saved_activation_bytes() const {
  int64_t n = 0;
  for (const auto& v : {&xs_, &ys_})
    for (const Tensor& t : *v)
      if (t.defined()) n += static_cast<int64_t>(t.nbytes());
  for (const auto& b : blocks_) n += b->saved_bytes();
  if (final_kernel_) n += static_cast<int64_t>(fmean_.nbytes() + frstd_.nbytes());
  if (c_.defined()) n += static_cast<int64_t>(c_.nbytes() + silu_c_.nbytes());
  return n;
}

}  // namespace vt
