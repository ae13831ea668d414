#include "backbone/config.h"

#include <stdexcept>

namespace vt {

NormScheme norm_scheme_from_name(const std::string& name) {
  if (name == "pre") return NormScheme::Pre;
  if (name == "post") return NormScheme::Post;
  if (name == "siamese") return NormScheme::Siamese;
  throw std::invalid_argument("model.norm.scheme: unknown scheme '" + name + "' (expected pre, post or siamese)");
}

const char* norm_scheme_name(NormScheme s) {
  switch (s) {
    case NormScheme::Pre: return "pre";
    case NormScheme::Post: return "post";
    case NormScheme::Siamese: return "siamese";
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
}

std::vector<float> drop_path_linspace(float max_rate, int64_t depth) {
  std::vector<float> r(static_cast<size_t>(depth), 0.0f);
  for (int64_t i = 0; i < depth; ++i)
    r[i] = depth > 1 ? static_cast<float>(static_cast<double>(max_rate) * i / (depth - 1)) : 0.0f;
  return r;
}

}  // namespace vt
