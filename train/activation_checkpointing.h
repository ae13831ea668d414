// The key `train.activation_checkpointing: none | blocks` that vtrain and
// dittrain share: one declaration, one parser. `blocks` recomputes each
// block's forward in the backward pass instead of keeping its activations
// (Backbone::set_activation_checkpointing); the gradients, and therefore
// losses and checkpoints, are bitwise those of `none`, so the key is a
// run-control key (core/run_control.h) that a resumed run may change.
#pragma once
#include "backbone/backbone.h"
#include "core/config.h"

namespace vt {

inline constexpr const char* kActivationCheckpointingKey = "train.activation_checkpointing";

// Declares the key (default none) in a program's schema.
void declare_activation_checkpointing(ConfigSchema& schema);
// The key's value; anything but none | blocks is a ConfigError naming the key.
ActivationCheckpointing activation_checkpointing(const Config& cfg);

}  // namespace vt
