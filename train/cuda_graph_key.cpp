#include "train/cuda_graph_key.h"

#include <string>

#include "core/config_checks.h"

namespace vt {

void declare_cuda_graph(ConfigSchema& schema) {
  schema.optional(kCudaGraphKey, ConfigType::String, "auto",
                  "CUDA Graph replay of the training step on a GPU with one process: auto | off (CPU: ignored)");
}

bool cuda_graph_enabled(const Config& cfg) {
  const std::string v = cfg.get<std::string>(kCudaGraphKey);
  if (v != "auto" && v != "off") bad_value(cfg, kCudaGraphKey, "expected auto | off, got '" + v + "'");
  return v == "auto";
}

}  // namespace vt
