#include "train/mechanism_scalars.h"

#include <cmath>

namespace vt {

std::vector<std::pair<std::string, double>> stream_rms_scalars(const Backbone& backbone) {
  const Backbone::StreamRms rms = backbone.stream_rms();
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [stream, values] : {std::make_pair("x", &rms.x), std::make_pair("y", &rms.y)})
    for (size_t l = 0; l < values->size(); ++l)
      if (!std::isnan((*values)[l])) out.emplace_back("stream_rms/" + std::string(stream) + "/" + std::to_string(l), (*values)[l]);
  return out;
}

std::vector<std::pair<std::string, double>> norm_scale_scalars(const Backbone& backbone) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto& [name, scale] : backbone.norm_scales()) out.emplace_back("norm_scale/" + name, scale);
  return out;
}

}  // namespace vt
