#include "backbone/modules.h"

#include "kernels/attention.h"

namespace vt {

namespace {
// (Re)allocates t unless it already has this shape.
void ensure(Tensor& t, const Shape& s) {
  if (!t.defined() || t.shape() != s) t = Tensor::empty(s);
}
}  // namespace

void ModuleScratch::plan(int64_t B, int64_t T, int64_t D, int64_t hidden) {
  ensure(d_a, {B, T, D});
  ensure(d_qkv, {B, T, 3 * D});
  ensure(d_h, {B, T, hidden});
}

Attention::Attention(ParamStore& store, const std::string& prefix, int64_t dim, int64_t heads, bool qkv_bias,
                     ParamInit weight_init)
    : qkv_(store, prefix + "attn.qkv", dim, 3 * dim, qkv_bias, weight_init),
      proj_(store, prefix + "attn.proj", dim, dim, true, weight_init),
      dim_(dim),
      heads_(heads) {}

void Attention::plan(int64_t B, int64_t T) {
  ensure(qkv_out_, {B, T, 3 * dim_});
  ensure(probs_, {B, heads_, T, T});
  ensure(a_, {B, T, dim_});
}

void Attention::forward(const Tensor& z, const Tensor& f) {
  qkv_.forward(z, qkv_out_);
  attention_forward(qkv_out_, heads_, a_, probs_);
  proj_.forward(a_, f);
}

void Attention::backward(const Tensor& df, const Tensor& z, const Tensor& dz, ModuleScratch& s) {
  proj_.backward(df, a_, s.d_a);
  attention_backward(qkv_out_, probs_, s.d_a, heads_, s.d_qkv);
  qkv_.backward(s.d_qkv, z, dz);
}

int64_t Attention::saved_bytes() const {
  return static_cast<int64_t>(qkv_out_.nbytes() + probs_.nbytes() + a_.nbytes());
}

Mlp::Mlp(ParamStore& store, const std::string& prefix, int64_t dim, int64_t hidden, Activation act,
         ParamInit weight_init)
    : fc1_(store, prefix + "mlp.fc1", dim, hidden, true, weight_init),
      fc2_(store, prefix + "mlp.fc2", hidden, dim, true, weight_init),
      act_(act),
      hidden_(hidden) {}

void Mlp::plan(int64_t B, int64_t T) {
  ensure(h1_, {B, T, hidden_});
  ensure(h2_, {B, T, hidden_});
}

void Mlp::forward(const Tensor& z, const Tensor& f) {
  fc1_.forward(z, h1_);
  activation_forward(act_, h1_, h2_);
  fc2_.forward(h2_, f);
}

void Mlp::backward(const Tensor& df, const Tensor& z, const Tensor& dz, ModuleScratch& s) {
  fc2_.backward(df, h2_, s.d_h);
  activation_backward(act_, s.d_h, h1_, s.d_h);
  fc1_.backward(s.d_h, z, dz);
}

int64_t Mlp::saved_bytes() const { return static_cast<int64_t>(h1_.nbytes() + h2_.nbytes()); }

}  // namespace vt
