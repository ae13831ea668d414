#include "backbone/config.h"

#include <cmath>
#include <stdexcept>

namespace vt {

NormScheme norm_scheme_from_name(const std::string& name) {
  if (name == "pre") return NormScheme::Pre;
  if (name == "post") return NormScheme::Post;
  if (name == "siamese") return NormScheme::Siamese;
  if (name == "mixln") return NormScheme::MixLN;
  if (name == "deepnorm") return NormScheme::DeepNorm;
  if (name == "residual") return NormScheme::ResiDual;
  if (name == "hybrid") return NormScheme::Hybrid;
  if (name == "spannorm") return NormScheme::SpanNorm;
  throw std::invalid_argument("model.norm.scheme: unknown scheme '" + name +
                              "' (expected pre, post, siamese, mixln, deepnorm, residual, hybrid or spannorm)");
}

const char* norm_scheme_name(NormScheme s) {
  switch (s) {
    case NormScheme::Pre: return "pre";
    case NormScheme::Post: return "post";
    case NormScheme::Siamese: return "siamese";
    case NormScheme::MixLN: return "mixln";
    case NormScheme::DeepNorm: return "deepnorm";
    case NormScheme::ResiDual: return "residual";
    case NormScheme::Hybrid: return "hybrid";
    case NormScheme::SpanNorm: return "spannorm";
  }
  return "?";
}

void BackboneConfig::validate() const {
  auto bad = [](const std::string& m) { throw std::invalid_argument("BackboneConfig: " + m); };
  if (dim <= 0) bad("dim must be positive, got " + std::to_string(dim));
  if (depth <= 0) bad("depth must be positive, got " + std::to_string(depth));
  if (heads <= 0 || dim % heads != 0)
    bad("heads (" + std::to_string(heads) + ") must divide dim (" + std::to_string(dim) + ")");
  if (hidden() <= 0) bad("mlp_ratio gives a non-positive hidden size");
  if (!drop_path.empty() && static_cast<int64_t>(drop_path.size()) != depth)
    bad("drop_path has " + std::to_string(drop_path.size()) + " rates for depth " + std::to_string(depth));
  for (float r : drop_path)
    if (r < 0.0f || r >= 1.0f) bad("drop_path rate " + std::to_string(r) + " outside [0, 1)");
  if (eps <= 0.0f) bad("eps must be positive");
  if (!(mixln_alpha >= 0.0 && mixln_alpha <= 1.0))
    bad("mixln_alpha must be in [0, 1], got " + std::to_string(mixln_alpha));
  if (spannorm_alpha && !(std::isfinite(*spannorm_alpha) && *spannorm_alpha > 0.0))
    bad("spannorm_alpha must be finite and positive, got " + std::to_string(*spannorm_alpha));
}

int64_t BackboneConfig::mixln_post_blocks() const {
  return static_cast<int64_t>(std::floor(mixln_alpha * static_cast<double>(depth)));
}

double BackboneConfig::deepnorm_alpha() const { return std::pow(2.0 * static_cast<double>(depth), 0.25); }
double BackboneConfig::deepnorm_beta() const { return std::pow(8.0 * static_cast<double>(depth), -0.25); }
double BackboneConfig::spannorm_scale() const {
  return spannorm_alpha ? *spannorm_alpha : 1.0 / std::sqrt(static_cast<double>(depth));
}

NormScheme BackboneConfig::block_scheme(int64_t index) const {
  if (scheme != NormScheme::MixLN) return scheme;
  return index < mixln_post_blocks() ? NormScheme::Post : NormScheme::Pre;
}

std::vector<float> drop_path_linspace(float max_rate, int64_t depth) {
  std::vector<float> r(static_cast<size_t>(depth), 0.0f);
  for (int64_t i = 0; i < depth; ++i)
    r[i] = depth > 1 ? static_cast<float>(static_cast<double>(max_rate) * i / (depth - 1)) : 0.0f;
  return r;
}

}  // namespace vt
