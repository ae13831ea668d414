// Configuration of the shared transformer backbone (docs/design.md §3): one Block
// and one Backbone serve DeiT and DiT and every normalisation scheme.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kernels/activation.h"

namespace vt {

// model.norm.scheme; per sublayer k of block l (F_k attention or MLP, LN a
// LayerNorm, N = depth):
//   Pre      y = y + F_k(norm_k(y))                       (timm ViT / DiT)
//   Post     x = norm_k(x + F_k(x))    (timm names norm1/norm2, applied after the add)
//   Siamese  docs/design.md §3 (arXiv 2602.08064)
//   MixLN    Mix-LN (Li et al., arXiv 2412.13795): blocks l < floor(mixln_alpha * N)
//            are Post blocks, the rest Pre blocks, on one stream; final norm as Pre.
//   DeepNorm DeepNet (Wang et al., arXiv 2203.00555): x = norm_k(alpha * x + F_k(x)),
//            alpha = (2N)^(1/4) (encoder-only); init: xavier_normal with gain
//            beta = (8N)^(-1/4) on the value rows of qkv, attn.proj, mlp.fc1 and
//            mlp.fc2, gain 1 on the query/key rows.
//   ResiDual ResiDual (Xie et al., arXiv 2304.14802): Post stream
//            x = norm_k(x + F_k(x)) and dual stream y = y + F_k(x), both starting
//            at the input h; output x + dual_norm(y), the paper's
//            x^a_{N+1} + LN(x^d_{N+1}) (as microsoft/ResiDual's encoder with
//            its default enc_alpha = enc_res_input_norm_scale = 1; its final
//            LayerNorm's eps 1e-7 is the model's eps here).
//   Hybrid   HybridNorm (Zhuo et al., arXiv 2503.04598): attention with
//            QKV-Norm, x = x + Attn(x) where q, k, v are LayerNorm'ed per head
//            after the projection (attn.{q,k,v}_norm over head_dim); Post-Norm
//            FFN x' = norm2(x), x = x' + FFN(x'); final norm as Pre. Per-head
//            q/k/v norms as timm's Attention(qk_norm=True) and the OLMo HybridNorm
//            model file released with SiameseNorm (Qwen-Applications/SiameseNorm).
//   SpanNorm SpanNorm (Wang et al., arXiv 2601.22580), as READ FROM ITS ABSTRACT
//            (the full text and the authors' code were not available; this is
//            not their implementation): one clean identity path spanning the
//            whole block and Post-Norm inside it,
//              a = norm1(x + Attn(x));  b = norm2(a + FFN(a));  x = x + alpha * b
//            with alpha = spannorm_alpha, by default 1/sqrt(N): each block
//            adds alpha * b with b normalised (RMS ~1 at unit norm2 weights),
//            so RMS(x_N) <= RMS(x_0) + sqrt(N) however the b's correlate, and
//            var(x_N) ~ var(x_0) + 1 for uncorrelated b's (our reading of the
//            abstract's "bounded signal variance"; at initialisation b ~
//            norm(x) is aligned with x and the RMS grows by ~alpha per block,
//            the first bound); drop-path acts on
//            alpha * b (the whole block, as stochastic depth); final norm as
//            Pre. Streams: y is the spanning path, x holds b.
// DiT variants: the same with modulate/gate around F_k, non-affine block norms.
// DiT SpanNorm (adaLN-Zero): modulate(., shift_k, scale_k) on each sublayer's
// input as Post-Norm does; gate_msa on Attn's output as Post-Norm does, while
// gate_mlp moves from FFN's output onto the spanning branch,
// x = x + alpha * gate_mlp * b, so that the zero-initialised adaLN makes
// every block the identity at initialisation, as in DiT.
enum class NormScheme { Pre, Post, Siamese, MixLN, DeepNorm, ResiDual, Hybrid, SpanNorm };
// "pre" / "post" / "siamese" / "mixln" / "deepnorm" / "residual" / "hybrid" / "spannorm";
// throws std::invalid_argument naming the string.
NormScheme norm_scheme_from_name(const std::string& name);
const char* norm_scheme_name(NormScheme s);

// DeiT: affine norms, drop-path, final merge final_norm(pre_norm(x) + post_norm(y)).
// DiT: adaLN-Zero conditioning c [B, D] (SiLU -> Linear(D, 6D) -> shift,
// scale, gate of both sublayers), non-affine norm_k inside modulate, final
// merge postnorm(x) + prenorm(y) (handed to DiT's final layer).
enum class ModelVariant { DeiT, DiT };

struct BackboneConfig {
  ModelVariant variant = ModelVariant::DeiT;
  NormScheme scheme = NormScheme::Siamese;
  bool normalized_input = true;  // siamese only: keep input_norm_k / norm_k
  bool depth_scaling = true;     // siamese only: c_l = sqrt(2 (l + 1)), else 1
  double mixln_alpha = 0.25;     // mixln only: fraction of Post blocks, in [0, 1]
  // spannorm only: scale of the spanning branch, > 0; unset: 1/sqrt(depth).
  std::optional<double> spannorm_alpha;
  int64_t dim = 384;
  int64_t depth = 12;
  int64_t heads = 6;
  double mlp_ratio = 4.0;
  Activation gelu = Activation::GeluErf;  // DeiT erf, DiT tanh
  bool qkv_bias = true;
  // Per-block drop-path rates (empty = none); DeiT uses linspace(0, rate, depth).
  std::vector<float> drop_path;
  float eps = 1e-6f;

  int64_t hidden() const { return static_cast<int64_t>(static_cast<double>(dim) * mlp_ratio); }
  bool conditioned() const { return variant == ModelVariant::DiT; }
  // Mix-LN: number of leading Post-Norm blocks, floor(mixln_alpha * depth).
  int64_t mixln_post_blocks() const;
  // DeepNet's residual scale alpha = (2N)^(1/4) and init gain beta = (8N)^(-1/4).
  double deepnorm_alpha() const;
  double deepnorm_beta() const;
  // SpanNorm's alpha: spannorm_alpha, or 1/sqrt(depth) when unset.
  double spannorm_scale() const;
  // The per-block scheme: Pre or Post for MixLN by index, else scheme itself.
  NormScheme block_scheme(int64_t index) const;
  // Throws std::invalid_argument naming the offending field.
  void validate() const;
};

// timm's stochastic-depth rule: rates linspace(0, max_rate, depth).
std::vector<float> drop_path_linspace(float max_rate, int64_t depth);

}  // namespace vt
