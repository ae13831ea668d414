#include "backbone/backbone.h"

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "backbone/workspace.h"
#include "kernels/activation.h"
#include "kernels/elementwise.h"

namespace vt {

const char* activation_checkpointing_name(ActivationCheckpointing m) {
  return m == ActivationCheckpointing::Blocks ? "blocks" : "none";
}

ActivationCheckpointing activation_checkpointing_from_name(const std::string& name) {
  if (name == "none") return ActivationCheckpointing::None;
  if (name == "blocks") return ActivationCheckpointing::Blocks;
  throw std::invalid_argument("activation checkpointing: expected none | blocks, got '" + name + "'");
}

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
  grad_marks_.push_back(store.numel());
  for (int64_t l = 0; l < cfg_.depth; ++l) {
    blocks_.push_back(std::make_unique<Block>(store, cfg_, l));
    grad_marks_.push_back(store.numel());
  }
  active_ = cfg_.depth;
  alias_ = cfg_.scheme == NormScheme::MixLN;
  const bool dit = cfg_.variant == ModelVariant::DiT;
  switch (cfg_.scheme) {
    case NormScheme::Siamese:
      final_kernel_ = final_x_ = final_y_ = true;
      if (!dit) {
        // As released: the module named pre_norm normalises x, post_norm y.
        fx_ = add_final("pre_norm", true);
        fy_ = add_final("post_norm", true);
        fin_ = add_final("final_norm", true);
      } else {
        fx_ = add_final("postnorm", true);
        fy_ = add_final("prenorm", true);
      }
      break;
    case NormScheme::Pre:
    case NormScheme::MixLN:
    case NormScheme::Hybrid:
      if (!dit) {
        final_kernel_ = true;
        (cfg_.scheme == NormScheme::Hybrid ? final_x_ : final_y_) = true;
        fin_ = add_final("norm", true);
      }
      break;
    case NormScheme::ResiDual:
      // x^a + LN(x^d): the dual stream's norm in the pre-norm slot.
      final_kernel_ = final_x_ = final_y_ = true;
      fy_ = add_final("dual_norm", !dit);
      break;
    case NormScheme::SpanNorm:
      // The spanning stream y, normalised as Pre-Norm's (DeiT "norm"; DiT: as is).
      final_y_ = true;
      if (!dit) {
        final_kernel_ = true;
        fin_ = add_final("norm", true);
      }
      break;
    case NormScheme::Post:
    case NormScheme::DeepNorm: break;
  }
  grad_end_ = store.numel();
}

void Backbone::set_active_depth(int64_t n) {
  if (n < 0 || n > cfg_.depth)
    throw std::invalid_argument("Backbone::set_active_depth: " + std::to_string(n) + " outside [0, " +
                                std::to_string(cfg_.depth) + "]");
  active_ = n;
  has_forward_ = false;
}

void Backbone::set_activation_checkpointing(ActivationCheckpointing m) {
  ckpt_ = m == ActivationCheckpointing::Blocks;
  has_forward_ = false;
}

void Backbone::plan(int64_t B, int64_t T) {
  // Replanned on a new shape, device, activation dtype (precision) or checkpointing mode.
  const DType act = activation_dtype(*store_);
  if (B == B_ && T == T_ && !xs_.empty() && planned_on_ == store_->device() && planned_act_ == act &&
      planned_ckpt_ == ckpt_)
    return;
  // Shared saved tensors (or a switch away from them): every block starts
  // from nothing, so no block keeps a tensor of the other layout.
  if (ckpt_ || planned_ckpt_) {
    for (auto& b : blocks_)
      for (Tensor* t : b->saved_tensors()) *t = Tensor();
    shared_saved_.clear();
  }
  planned_on_ = store_->device();
  planned_act_ = act;
  planned_ckpt_ = ckpt_;
  B_ = B, T_ = T;
  const Device dev = store_->device();
  auto ensure = [&](Tensor& t, const Shape& s) { ensure_workspace(t, s, dev); };
  const int64_t D = cfg_.dim, S = 2 * cfg_.depth + 1;
  bool hx = false, hy = false;
  for (const auto& b : blocks_) hx = hx || b->uses_x(), hy = hy || b->uses_y();
  if (alias_) hx = hy = true;
  xs_.assign(S, Tensor());
  ys_.assign(S, Tensor());
  for (int64_t i = 0; i < S; ++i) {
    // Checkpointing keeps the block boundaries (even slots); the mid-block
    // slots (odd) are one tensor per stream, rewritten by each recompute.
    const bool shared_mid = ckpt_ && i % 2 == 1 && i > 1;
    if (hx) xs_[i] = shared_mid ? xs_[1] : Tensor::empty({B, T, D}, DType::F32, dev);
    if (hy) ys_[i] = alias_ ? xs_[i] : shared_mid ? ys_[1] : Tensor::empty({B, T, D}, DType::F32, dev);
  }
  for (auto& b : blocks_) {
    if (!ckpt_) {
      b->plan(B, T);
      continue;
    }
    // Each block takes the slots planned so far and adds those it needs
    // beyond them (Mix-LN's Post blocks the norm after the add, a block
    // with drop-path its scales), so the set is the union of the blocks'.
    std::vector<Tensor*> slots = b->saved_tensors();
    shared_saved_.resize(slots.size());
    for (size_t i = 0; i < slots.size(); ++i) *slots[i] = shared_saved_[i];
    b->plan(B, T);
    for (size_t i = 0; i < slots.size(); ++i)
      if (slots[i]->defined()) shared_saved_[i] = *slots[i];
  }
  scratch_.plan(cfg_, B, T, dev, act);
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
  const int64_t L2 = 2 * active_;
  if (final_x_) sp.x = xs_[L2];
  if (final_y_) sp.y = ys_[L2];
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

void Backbone::set_sample_keys(int64_t offset, int64_t stride) {
  if (offset < 0 || stride < 1)
    throw std::invalid_argument("Backbone::set_sample_keys: offset " + std::to_string(offset) + " / stride " +
                                std::to_string(stride) + " (need offset >= 0, stride >= 1)");
  for (auto& b : blocks_) b->set_sample_keys(offset, stride);
}

void Backbone::set_step_source(const Tensor& step) {
  for (auto& b : blocks_) b->set_step_source(step);
}

void Backbone::forward_block(int64_t l) {
  Block& b = *blocks_[l];
  std::vector<Tensor*> slots;
  if (ckpt_) {
    slots = b.saved_tensors();
    for (size_t i = 0; i < slots.size(); ++i)
      if (shared_saved_[i].defined()) *slots[i] = shared_saved_[i];
  }
  b.forward(io(l), silu_c_, fwd_training_, fwd_seed_, fwd_step_, scratch_);
  // A tensor the forward allocated itself (a Linear's bf16 input copy) joins the set.
  for (size_t i = 0; i < slots.size(); ++i)
    if (slots[i]->defined()) shared_saved_[i] = *slots[i];
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
  fwd_training_ = training, fwd_seed_ = seed, fwd_step_ = step;
  for (int64_t l = 0; l < active_; ++l) forward_block(l);
  const int64_t L2 = 2 * active_;
  if (final_kernel_) {
    siamese_input_forward(final_spec(), Tensor(), out, fmean_, frstd_);
  } else {
    Tensor o = out;
    o.copy_from(xs_[L2].defined() && !final_y_ ? xs_[L2] : ys_[L2]);
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

  // Which gradient buffer holds the stream's gradient above the current
  // point: with aliased streams (Mix-LN) only one of gx_/gy_ is live.
  bool live_x = true, live_y = true;
  if (final_kernel_) {
    const SiameseInputSpec sp = final_spec();
    SiameseInputGrads g;
    g.dz = dout;
    if (final_x_) g.dx = gx_;
    if (final_y_) g.dy = gy_;
    auto pg = [&](const FinalNorm& n, Tensor& w, Tensor& b) {
      if (n.affine) w = store_->grad(n.w), b = store_->grad(n.b);
    };
    pg(fx_, g.post_dw, g.post_db);
    pg(fy_, g.pre_dw, g.pre_db);
    pg(fin_, g.in_dw, g.in_db);
    siamese_input_backward(sp, fmean_, frstd_, g);
    live_x = final_x_, live_y = final_y_;
  } else {
    const bool to_x = xs_[2 * active_].defined() && !alias_ && !final_y_;
    (to_x ? gx_ : gy_).copy_from(dout);
    live_x = to_x, live_y = !to_x;
  }
  // Final: the merge norms, and the blocks beyond the active depth (untouched).
  store_->grads_final(grad_marks_[active_], grad_end_ - grad_marks_[active_]);
  if (cfg_.conditioned()) d_silu_.zero();
  for (int64_t l = active_ - 1; l >= 0; --l) {
    Block& b = *blocks_[l];
    if (alias_) {  // hand the one stream's gradient to the buffer this block uses
      if (b.uses_x() && !live_x) gx_.copy_from(gy_);
      if (b.uses_y() && !live_y) gy_.copy_from(gx_);
      live_x = b.uses_x(), live_y = b.uses_y();
    }
    // Checkpointing: refill the shared saved tensors with block l's from its
    // kept input streams (the last block's are still those of the forward).
    if (ckpt_ && l != active_ - 1) forward_block(l);
    b.backward(io(l), silu_c_, gx_, gy_, d_silu_, scratch_);
    store_->grads_final(grad_marks_[l], grad_marks_[l + 1] - grad_marks_[l]);
  }

  // Ops, not host loops: dh may live on the GPU.
  const bool ux = live_x && xs_[0].defined(), uy = live_y && ys_[0].defined();
  Tensor out = dh;  // a handle on dh's storage
  if (ux && uy) add(gx_, gy_, out);
  else if (ux || uy) out.copy_from(ux ? gx_ : gy_);
  else out.zero();
  if (cfg_.conditioned()) activation_backward(Activation::SiLU, d_silu_, c_, dc);
}

Backbone::StreamRms Backbone::stream_rms() const {
  if (!has_forward_) throw std::logic_error("Backbone::stream_rms: no forward to measure");
  auto rms = [](const Tensor& dev_t) {
    const Tensor t = dev_t.to(Device::cpu());  // logging only: a copy when the model is on a GPU
    const float* p = t.f32();
    double a = 0;
    for (int64_t i = 0, n = t.numel(); i < n; ++i) a += static_cast<double>(p[i]) * p[i];
    return std::sqrt(a / static_cast<double>(t.numel()));
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  StreamRms r;
  for (int64_t l = 0; l < active_; ++l) {
    const Block& b = *blocks_[l];
    r.x.push_back(b.uses_x() ? rms(xs_[2 * l + 2]) : nan);
    r.y.push_back(b.uses_y() ? rms(ys_[2 * l + 2]) : nan);
  }
  return r;
}

std::vector<std::pair<std::string, double>> Backbone::norm_scales() const {
  std::vector<std::pair<std::string, double>> r;
  for (const auto& b : blocks_)
    for (auto& e : b->norm_scales()) r.push_back(std::move(e));
  for (const FinalNorm* n : {&fx_, &fy_, &fin_}) {
    if (!n->affine) continue;
    const Tensor w = store_->value(n->w).to(Device::cpu());
    double a = 0;
    for (int64_t i = 0; i < w.numel(); ++i) a += std::fabs(static_cast<double>(w.f32()[i]));
    std::string name = store_->info(n->w).name;
    r.emplace_back(name.substr(0, name.size() - 7), a / static_cast<double>(w.numel()));
  }
  return r;
}

int64_t Backbone::saved_activation_bytes() const {
  // Each storage once: Mix-LN's y is x; checkpointing shares the mid-block
  // slots and the blocks' saved tensors.
  std::set<const void*> seen;
  int64_t n = 0;
  auto count = [&](const Tensor& t) {
    if (t.defined() && seen.insert(t.storage().get()).second) n += static_cast<int64_t>(t.nbytes());
  };
  for (const auto* v : {&xs_, &ys_})
    for (const Tensor& t : *v) count(t);
  for (const auto& b : blocks_)
    for (const Tensor* t : b->saved_tensors()) count(*t);
  if (final_kernel_) count(fmean_), count(frstd_);
  count(c_), count(silu_c_);
  return n;
}

}  // namespace vt
