#include "diffusion/dit_model.h"

#include <stdexcept>
#include <string>

#include "core/philox.h"
#include "kernels/activation.h"
#include "kernels/elementwise.h"
#include "kernels/embedding.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/modulate.h"
#include "kernels/patch.h"

namespace vt {
namespace {
constexpr int64_t kFreqDim = 256;  // DiT TimestepEmbedder.frequency_embedding_size
constexpr float kEps = 1e-6f;
constexpr uint64_t kPurposeLabelDrop = 0xD1F70001;

void need(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("DiTConfig: " + what);
}
}  // namespace

void DiTConfig::validate() const {
  need(input_size > 0 && patch > 0 && input_size % patch == 0,
       "model.input_size (" + std::to_string(input_size) + ") must be a positive multiple of model.patch (" +
           std::to_string(patch) + ")");
  need(in_channels > 0, "model.in_channels must be positive");
  need(hidden > 0 && hidden % 4 == 0, "model.hidden (" + std::to_string(hidden) +
                                          ") must be a positive multiple of 4 (2D sin-cos position embedding)");
  need(heads > 0 && hidden % heads == 0, "model.hidden must be divisible by model.heads");
  need(depth > 0, "model.depth must be positive");
  need(num_classes > 0, "model.num_classes must be positive");
  need(class_dropout >= 0 && class_dropout < 1, "model.class_dropout must be in [0, 1)");
}

DiTConfig dit_preset(const std::string& name, DiTConfig c) {
  const auto slash = name.find('/');
  if (name.rfind("DiT-", 0) != 0 || slash == std::string::npos)
    throw std::invalid_argument("dit_preset: unknown model '" + name + "' (expected DiT-{S,B,L,XL}/{2,4,8})");
  const std::string size = name.substr(4, slash - 4), p = name.substr(slash + 1);
  if (size == "S") c.depth = 12, c.hidden = 384, c.heads = 6;
  else if (size == "B") c.depth = 12, c.hidden = 768, c.heads = 12;
  else if (size == "L") c.depth = 24, c.hidden = 1024, c.heads = 16;
  else if (size == "XL") c.depth = 28, c.hidden = 1152, c.heads = 16;
  else throw std::invalid_argument("dit_preset: unknown size '" + size + "' in '" + name + "' (S, B, L, XL)");
  if (p == "2" || p == "4" || p == "8") c.patch = std::stoi(p);
  else throw std::invalid_argument("dit_preset: unknown patch '" + p + "' in '" + name + "' (2, 4, 8)");
  return c;
}

DiT::DiT(const DiTConfig& cfg) : cfg_(cfg) {
  cfg_.validate();
  ParamStore& store = store_;
  const int64_t D = cfg_.hidden, C = cfg_.in_channels, p = cfg_.patch;
  xw_ = store.add("x_embedder.proj.weight", {D, C, p, p}, ParamInit::xavier_uniform(), true);
  xb_ = store.add("x_embedder.proj.bias", {D}, ParamInit::zeros(), false);
  t0_ = Linear(store, "t_embedder.mlp.0", kFreqDim, D, true, ParamInit::normal(0.02f));
  t2_ = Linear(store, "t_embedder.mlp.2", D, D, true, ParamInit::normal(0.02f));
  const int64_t rows = cfg_.num_classes + (cfg_.class_dropout > 0 ? 1 : 0);
  ytab_ = store.add("y_embedder.embedding_table.weight", {rows, D}, ParamInit::normal(0.02f), true);
  pos_ = store.add("pos_embed", {1, cfg_.tokens(), D}, ParamInit::zeros(), false);

  BackboneConfig bc;
  bc.variant = ModelVariant::DiT;
  bc.scheme = cfg_.scheme;
  bc.normalized_input = cfg_.normalized_input;
  bc.depth_scaling = cfg_.depth_scaling;
  bc.mixln_alpha = cfg_.mixln_alpha;
  bc.spannorm_alpha = cfg_.spannorm_alpha;
  bc.dim = D;
  bc.depth = cfg_.depth;
  bc.heads = cfg_.heads;
  bc.mlp_ratio = cfg_.mlp_ratio;
  bc.gelu = Activation::GeluTanh;
  bc.qkv_bias = true;
  bc.eps = kEps;
  trunk_begin_ = store.numel();
  backbone_ = std::make_unique<Backbone>(store, bc);
  final_begin_ = store.numel();

  final_ada_ = Linear(store, "final_layer.adaLN_modulation.1", D, 2 * D, true, ParamInit::zeros());
  final_lin_ = Linear(store, "final_layer.linear", D, p * p * cfg_.out_channels(), true, ParamInit::zeros());
  store_.finalize();
  set_pos_embed();
}

void DiT::init_weights(uint64_t seed) {
  store_.init(seed);
  set_pos_embed();
}

void DiT::load(const std::map<std::string, Tensor>& state_dict) {
  store_.load(state_dict, /*strict=*/true);
  set_pos_embed();
}

void DiT::to(Device device) {
  store_.to(device);
  B_ = 0;  // the next forward plans on the new device
}

void DiT::set_pos_embed() { sincos_pos_embed_2d(cfg_.grid(), cfg_.grid(), store_.value(pos_)); }

int64_t DiT::num_params() const { return store_.numel() - store_.info(pos_).numel; }

void DiT::plan(int64_t B) {
  if (B == B_) return;
  B_ = B;
  const int64_t D = cfg_.hidden, N = cfg_.tokens(), p = cfg_.patch;
  const int64_t cpp = cfg_.in_channels * p * p, fo = p * p * cfg_.out_channels();
  // Workspaces live where the parameters do.
  const Device dev = store_.device();
  auto E = [dev](const Shape& s) { return Tensor::empty(s, DType::F32, dev); };
  patches_ = E({B, N, cpp});
  h_ = E({B, N, D});
  t_freq_ = E({B, kFreqDim});
  t_h1_ = E({B, D});
  t_h2_ = E({B, D});
  y_ids_ = Tensor::empty({B}, DType::I32, dev);
  c_ = E({B, D});
  silu_c_ = E({B, D});
  ada_ = E({B, 2 * D});
  o_ = E({B, N, D});
  ln_mean_ = E({B * N});
  ln_rstd_ = E({B * N});
  ln_ = E({B, N, D});
  mod_ = E({B, N, D});
  tok_ = E({B, N, fo});
  dtok_ = E({B, N, fo});
  dmod_ = E({B, N, D});
  do_ = E({B, N, D});
  dada_ = E({B, 2 * D});
  dsilu_ = E({B, D});
  dc_ = E({B, D});
  dc_bb_ = E({B, D});
  dh_ = E({B, N, D});
  dt_h2_ = E({B, D});
  dt_h1_ = E({B, D});
  yemb_ = E({B, D});
}

void DiT::forward(const Tensor& x, const Tensor& t, const Tensor& y, const Tensor& out) {
  const int64_t C = cfg_.in_channels, S = cfg_.input_size, D = cfg_.hidden, p = cfg_.patch;
  if (!x.defined() || x.dim() != 4 || x.size(1) != C || x.size(2) != S || x.size(3) != S)
    throw std::invalid_argument("DiT::forward: x must be [B, " + std::to_string(C) + ", " + std::to_string(S) + ", " +
                                std::to_string(S) + "], got " + (x.defined() ? shape_str(x.shape()) : "undefined"));
  const int64_t B = x.size(0);
  if (!t.defined() || t.dtype() != DType::F32 || t.shape() != Shape{B})
    throw std::invalid_argument("DiT::forward: t must be F32 [" + std::to_string(B) + "], got " +
                                (t.defined() ? t.str() : "undefined"));
  if (!y.defined() || y.dtype() != DType::I32 || y.shape() != Shape{B})
    throw std::invalid_argument("DiT::forward: y must be I32 [" + std::to_string(B) + "], got " +
                                (y.defined() ? y.str() : "undefined"));
  const Shape os{B, cfg_.out_channels(), S, S};
  if (!out.defined() || out.shape() != os)
    throw std::invalid_argument("DiT::forward: out must be " + shape_str(os) + ", got " +
                                (out.defined() ? shape_str(out.shape()) : "undefined"));
  plan(B);
  const Tensor xw = store_.value(xw_).view({D, C * p * p});
  patchify(x.contiguous(), p, patches_);
  linear_forward(patches_, xw, store_.value(xb_), h_);
  pos_embed_add(h_, store_.value(pos_), h_);

  timestep_embedding(t.contiguous(), t_freq_);
  t0_.forward(t_freq_, t_h1_);
  activation_forward(Activation::SiLU, t_h1_, t_h2_);
  t2_.forward(t_h2_, c_);
  y_ids_.copy_from(y);
  embedding_forward(store_.value(ytab_), y_ids_, yemb_);
  add(c_, yemb_, c_);

  backbone_->forward(h_, c_, o_);

  activation_forward(Activation::SiLU, c_, silu_c_);
  final_ada_.forward(silu_c_, ada_);
  layernorm_forward(o_, Tensor(), Tensor(), kEps, ln_, ln_mean_, ln_rstd_);
  modulate_forward(ln_, ada_.slice(1, 0, D), ada_.slice(1, D, 2 * D), mod_);
  final_lin_.forward(mod_, tok_);
  unpatchify(tok_, p, out);
}

void DiT::backward(const Tensor& dout) {
  const int64_t D = cfg_.hidden, C = cfg_.in_channels, p = cfg_.patch;
  if (B_ == 0) throw std::logic_error("DiT::backward called before forward");
  const Shape os{B_, cfg_.out_channels(), cfg_.input_size, cfg_.input_size};
  if (!dout.defined() || dout.shape() != os)
    throw std::invalid_argument("DiT::backward: dout must be " + shape_str(os) + ", got " +
                                (dout.defined() ? shape_str(dout.shape()) : "undefined"));
  unpatchify_backward(dout.contiguous(), p, dtok_);
  final_lin_.backward(dtok_, mod_, dmod_);
  modulate_backward(dmod_, ln_, ada_.slice(1, D, 2 * D), do_, dada_.slice(1, 0, D), dada_.slice(1, D, 2 * D));
  layernorm_backward(do_, o_, Tensor(), ln_mean_, ln_rstd_, do_, Tensor(), Tensor());
  final_ada_.backward(dada_, silu_c_, dsilu_);
  store_.grads_final(final_begin_, store_.numel() - final_begin_);
  activation_backward(Activation::SiLU, dsilu_, c_, dc_);

  backbone_->backward(do_, dh_, dc_bb_);
  add(dc_, dc_bb_, dc_);

  // pos_embed is frozen: dh flows to the patch projection only.
  linear_backward(dh_, patches_, store_.value(xw_).view({D, C * p * p}), Tensor(),
                  store_.grad(xw_).view({D, C * p * p}), store_.grad(xb_));
  embedding_backward(dc_, y_ids_, store_.grad(ytab_));
  t2_.backward(dc_, t_h2_, dt_h2_);
  activation_backward(Activation::SiLU, dt_h2_, t_h1_, dt_h1_);
  t0_.backward(dt_h1_, t_freq_, Tensor());
  store_.grads_final(0, trunk_begin_);
}

void drop_labels(Tensor& labels, double p, int64_t num_classes, uint64_t seed, uint64_t step, int rank, int world) {
  if (labels.dtype() != DType::I32 || !labels.device().is_cpu() || !labels.is_contiguous())
    throw std::invalid_argument("drop_labels: labels must be a contiguous CPU I32 tensor, got " + labels.str());
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument("drop_labels: rank " + std::to_string(rank) + " outside world " + std::to_string(world));
  if (p <= 0) return;
  Philox rng(seed, philox_stream(kPurposeLabelDrop, step));
  int32_t* y = labels.i32();
  // Every rank walks the whole global batch's stream and keeps its rows.
  const int64_t global = labels.numel() * world;
  for (int64_t g = 0; g < global; ++g) {
    const bool drop = rng.bernoulli(p);
    if (g % world == rank && drop) y[g / world] = static_cast<int32_t>(num_classes);
  }
}

}  // namespace vt
