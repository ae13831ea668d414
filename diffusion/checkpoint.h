// dittrain checkpoints (DESIGN.md §5): <run>/step_<N>/ with
//   model.safetensors      DiT state dict (PyTorch names)
//   ema.safetensors        EMA weights under the same names
//   optimizer.safetensors  AdamW moments "exp_avg.<name>" / "exp_avg_sq.<name>"
//   state.json             step, epoch, batch position, seed, config digest, ...
// written into "<run>/.step_<N>.tmp.<pid>/" and renamed when complete, so a
// directory named step_<N> is always whole.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace vt {

struct DitCheckpoint {
  std::map<std::string, Tensor> model, ema, optimizer;
  nlohmann::json state;
};

// Writes run_dir/step_<step> (replacing an existing one); returns its path.
std::string save_dit_checkpoint(const std::string& run_dir, int64_t step, const DitCheckpoint& ck);
// Throws std::runtime_error naming the directory and file when a part is
// missing or unreadable. with_optimizer = false skips optimizer.safetensors.
DitCheckpoint load_dit_checkpoint(const std::string& dir, bool with_optimizer = true);
// The complete checkpoint with the largest step, if any.
std::optional<std::string> latest_dit_checkpoint(const std::string& run_dir);

}  // namespace vt
