#include "train/activation_checkpointing.h"

#include <stdexcept>
#include <string>

#include "core/config_checks.h"

namespace vt {

void declare_activation_checkpointing(ConfigSchema& schema) {
  schema.optional(kActivationCheckpointingKey, ConfigType::String, "none",
                  "none | blocks (recompute each block's forward in the backward pass: less activation memory, "
                  "about one more forward of time, bitwise the same training)");
}

ActivationCheckpointing activation_checkpointing(const Config& cfg) {
  const std::string v = cfg.get<std::string>(kActivationCheckpointingKey);
  try {
    return activation_checkpointing_from_name(v);
  } catch (const std::invalid_argument&) {
    bad_value(cfg, kActivationCheckpointingKey, "expected none | blocks, got '" + v + "'");
  }
}

}  // namespace vt
