// Run-control keys: settings that say how long a run goes, how often it
// logs or checkpoints, how it evaluates and draws sample grids (eval.*,
// sample.*), where it resumes from, how many threads it uses and how it
// buckets the gradient all-reduce (rounding only) and whether it recomputes
// activations (train.activation_checkpointing: memory only) or replays the
// step as a CUDA Graph (train.cuda_graph: launch overhead only), how it
// meets a cluster (run.stop_signals, dist.timeout_s, ckpt.on_write_error), but not
// what its training computes. They are left out of the config digest
// that checkpoints record, so resuming a run with, e.g., resume=auto or a
// larger train.max_steps is not reported as "written with a different
// config". The one list for both trainers.
#pragma once
#include <string>
#include <vector>

#include "core/config.h"

namespace vt {

// Dotted key paths (a map key stands for its whole subtree). Keys a
// program's schema does not have are simply absent from its configs.
const std::vector<std::string>& run_control_keys();

// Config::digest_hex without run_control_keys(): the digest in state.json.
std::string resume_digest(const Config& cfg);

}  // namespace vt
