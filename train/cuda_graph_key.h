// The key `train.cuda_graph: auto | off` that vtrain and dittrain share: one
// declaration, one parser. auto replays the device part of each training
// step as one CUDA Graph on a GPU with one process (train/step_graph.h,
// LoopOptions::cuda_graph); off runs every step eagerly; the CPU ignores it.
// Replays compute what eager steps compute, so the key is a run-control key
// (core/run_control.h) that a resumed run may change.
#pragma once
#include "core/config.h"

namespace vt {

inline constexpr const char* kCudaGraphKey = "train.cuda_graph";

// Declares the key (default auto) in a program's schema.
void declare_cuda_graph(ConfigSchema& schema);
// true for auto, false for off; anything else is a ConfigError naming the key.
bool cuda_graph_enabled(const Config& cfg);

}  // namespace vt
