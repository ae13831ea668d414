#include "backbone/modules.h"

#include "backbone/workspace.h"
#include "kernels/attention.h"
#include "kernels/layernorm.h"

namespace vt {


void ModuleScratch::plan(int64_t B, int64_t T, int64_t D, int64_t hidden, bool qkv_norm, Device dev, DType act) {
  auto ensure = [&](Tensor& t, const Shape& s) { ensure_workspace(t, s, dev, act); };
  ensure(d_a, {B, T, D});
  ensure(d_qkv, {B, T, 3 * D});
  ensure(d_h, {B, T, hidden});
  if (qkv_norm) {
    ensure(qn_x, {B, T, D});
    ensure(qn_y, {B, T, D});
  }
}

Attention::Attention(ParamStore& store, const std::string& prefix, int64_t dim, int64_t heads, bool qkv_bias,
                     ParamInit qkv_init, ParamInit proj_init, bool qkv_norm, float eps)
    : qkv_(store, prefix + "attn.qkv", dim, 3 * dim, qkv_bias, qkv_init),
      proj_(store, prefix + "attn.proj", dim, dim, true, proj_init),
      dim_(dim),
      heads_(heads),
      qkv_norm_(qkv_norm),
      eps_(eps),
      store_(&store) {
  if (!qkv_norm) return;
  const char* names[3] = {"q_norm", "k_norm", "v_norm"};
  for (int j = 0; j < 3; ++j) {
    const std::string n = prefix + "attn." + names[j];
    nw_[j] = store.add(n + ".weight", {dim / heads}, ParamInit::ones(), false);
    nb_[j] = store.add(n + ".bias", {dim / heads}, ParamInit::zeros(), false);
  }
}

void Attention::plan(int64_t B, int64_t T) {
  const Device dev = store_->device();
  const DType act = activation_dtype(*store_);
  auto ensure = [&](Tensor& t, const Shape& s) { ensure_workspace(t, s, dev, act); };
  ensure(qkv_out_, {B, T, 3 * dim_});
  // probs on the CPU (bitwise-stable training), logsumexp on CUDA (flash:
  // no [T, T] tensor); kernels/attention.h.
  const AttentionSavedSpec spec = attention_saved_spec(dev, B, T, heads_, dim_ / heads_, act);
  ensure_workspace(saved_, spec.shape, dev, spec.dtype);
  ensure(a_, {B, T, dim_});
  if (qkv_norm_) {
    ensure(qkv_raw_, {B, T, 3 * dim_});
    ensure_workspace(qn_mean_, {3, B * T * heads_}, dev);  // statistics: F32
    ensure_workspace(qn_rstd_, {3, B * T * heads_}, dev);
  }
}

void Attention::forward(const Tensor& z, const Tensor& f, ModuleScratch& s) {
  if (!qkv_norm_) {
    qkv_.forward(z, qkv_out_);
  } else {
    // q, k, v are column blocks of the projection; the LayerNorm kernel wants
    // contiguous rows, so each block goes through a contiguous copy whose
    // rows of head_dim are the per-head vectors.
    qkv_.forward(z, qkv_raw_);
    const int64_t dh = dim_ / heads_;
    for (int j = 0; j < 3; ++j) {
      s.qn_x.copy_from(qkv_raw_.slice(2, j * dim_, (j + 1) * dim_));
      layernorm_forward(s.qn_x.view({-1, dh}), store_->value(nw_[j]), store_->value(nb_[j]), eps_,
                        s.qn_y.view({-1, dh}), qn_mean_.select(0, j), qn_rstd_.select(0, j));
      qkv_out_.slice(2, j * dim_, (j + 1) * dim_).copy_from(s.qn_y);
    }
  }
  attention_forward(qkv_out_, heads_, a_, saved_);
  proj_.forward(a_, f);
}

void Attention::backward(const Tensor& df, const Tensor& z, const Tensor& dz, ModuleScratch& s) {
  proj_.backward(df, a_, s.d_a);
  attention_backward(qkv_out_, a_, saved_, s.d_a, heads_, s.d_qkv);
  if (qkv_norm_) {
    const int64_t dh = dim_ / heads_;
    for (int j = 0; j < 3; ++j) {
      Tensor dpart = s.d_qkv.slice(2, j * dim_, (j + 1) * dim_);
      s.qn_y.copy_from(dpart);
      s.qn_x.copy_from(qkv_raw_.slice(2, j * dim_, (j + 1) * dim_));
      layernorm_backward(s.qn_y.view({-1, dh}), s.qn_x.view({-1, dh}), store_->value(nw_[j]),
                         qn_mean_.select(0, j), qn_rstd_.select(0, j), s.qn_y.view({-1, dh}),
                         store_->grad(nw_[j]), store_->grad(nb_[j]));
      dpart.copy_from(s.qn_y);
    }
  }
  qkv_.backward(s.d_qkv, z, dz);
}

std::vector<Tensor*> Attention::saved_tensors() {
  std::vector<Tensor*> r{&qkv_out_, &saved_, &a_, &qkv_raw_, &qn_mean_, &qn_rstd_};
  for (Linear* l : {&qkv_, &proj_}) r.push_back(l->saved_tensor());
  return r;
}

Mlp::Mlp(ParamStore& store, const std::string& prefix, int64_t dim, int64_t hidden, Activation act,
         ParamInit fc1_init, ParamInit fc2_init)
    : fc1_(store, prefix + "mlp.fc1", dim, hidden, true, fc1_init),
      fc2_(store, prefix + "mlp.fc2", hidden, dim, true, fc2_init),
      act_(act),
      hidden_(hidden),
      store_(&store) {}

void Mlp::plan(int64_t B, int64_t T) {
  const Device dev = fc1_.device();
  const DType act = activation_dtype(*store_);
  auto ensure = [&](Tensor& t, const Shape& s) { ensure_workspace(t, s, dev, act); };
  ensure(h1_, {B, T, hidden_});
  ensure(h2_, {B, T, hidden_});
}

// fc1 + activation and fc2's input gradient + the activation's derivative
// are one call each, so on CUDA they fuse into cuBLASLt epilogues
// (kernels/matmul.h); the CPU runs the same separate ops as before.
void Mlp::forward(const Tensor& z, const Tensor& f) {
  fc1_.forward_act(act_, z, h1_, h2_);
  fc2_.forward(h2_, f);
}

void Mlp::backward(const Tensor& df, const Tensor& z, const Tensor& dz, ModuleScratch& s) {
  fc2_.backward_act(act_, df, h2_, h1_, s.d_h);
  fc1_.backward(s.d_h, z, dz);
}

std::vector<Tensor*> Mlp::saved_tensors() { return {&h1_, &h2_, fc1_.saved_tensor(), fc2_.saved_tensor()}; }

}  // namespace vt
