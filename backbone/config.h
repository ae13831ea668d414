// Configuration of the shared transformer backbone (docs/design.md §3): one Block
// and one Backbone serve DeiT and DiT and every normalisation scheme.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/activation.h"

namespace vt {

// model.norm.scheme. Post: x = norm_k(x + F_k(x)) per sublayer (timm names
// norm1/norm2 applied after the residual add); Pre: y = y + F_k(norm_k(y));
// Siamese: docs/design.md §3.
enum class NormScheme { Pre, Post, Siamese };
// "pre" / "post" / "siamese"; throws std::invalid_argument naming the string.
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
  // Throws std::invalid_argument naming the offending field.
  void validate() const;
};

// timm's stochastic-depth rule: rates linspace(0, max_rate, depth).
std::vector<float> drop_path_linspace(float max_rate, int64_t depth);

}  // namespace vt
