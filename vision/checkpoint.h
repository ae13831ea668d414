// Training checkpoints (DESIGN §5): a directory <run>/step_<N>/ holding
//   model.safetensors      the model's state dict (PyTorch names)
//   ema.safetensors        the EMA weights under the same names (absent without EMA)
//   optimizer.safetensors  AdamW moments as "exp_avg.<name>" / "exp_avg_sq.<name>"
//   state.json             step, epoch, sampler position, RNG keys, config digest, ...
// It is written into "<run>/.step_<N>.tmp.<pid>/" and renamed to step_<N>
// only when every file is complete and fsync'ed, so a directory named
// step_<N> is always complete; stale temporaries are ignored (and removed by
// prune_checkpoints).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace vt {

struct CheckpointData {
  std::map<std::string, Tensor> model, ema, optimizer;  // ema may be empty
  nlohmann::json state;
};

// Writes run_dir/step_<step> (replacing an existing one) and returns its path.
std::string save_checkpoint(const std::string& run_dir, int64_t step, const CheckpointData& data);

// Reads a checkpoint directory. Throws std::runtime_error naming the
// directory and the file for a missing or unreadable part.
CheckpointData load_checkpoint(const std::string& dir);

// Complete checkpoints of a run as (step, path), ascending by step.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& run_dir);
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

// Keeps the newest keep_last checkpoints and step `keep_step` (the best; -1:
// none); removes the others and stale temporary directories.
void prune_checkpoints(const std::string& run_dir, int keep_last, int64_t keep_step);

}  // namespace vt
