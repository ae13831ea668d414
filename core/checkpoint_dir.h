// Training checkpoint directories (docs/design.md §5), shared by vtrain and dittrain:
// a directory <run>/step_<N>/ holding
//   model.safetensors      the model's state dict (PyTorch names)
//   ema.safetensors        EMA weights under the same names (absent when the
//                          trainer keeps no EMA)
//   optimizer.safetensors  AdamW moments as "exp_avg.<name>" / "exp_avg_sq.<name>"
//   state.json             step, epoch, sampler position, RNG keys, config digest, ...
// All tensors are saved as they are (fp32 on the CPU for both trainers) with
// safetensors metadata {"format": "pt"}, so torch's safetensors loader reads
// them directly.
//
// Crash safety: every file is written into "<run>/.step_<N>.tmp.<pid>/" and
// fsync'ed (core/atomic_file.h), the temporary directory is fsync'ed, renamed
// to step_<N>, and <run> is fsync'ed. A directory named step_<N> is therefore
// always complete; a crash leaves at most a ".step_*" temporary, which
// listing ignores and remove_stale_checkpoint_temps() / prune_checkpoints()
// delete.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace vt {

struct CheckpointData {
  std::map<std::string, Tensor> model;
  std::map<std::string, Tensor> ema;        // empty: no ema.safetensors
  std::map<std::string, Tensor> optimizer;  // always written (possibly empty)
  nlohmann::json state;
};

// A checkpoint that could not be written (ENOSPC, EDQUOT, EIO, EFBIG under a
// file-size limit, ...). what() names the checkpoint, the file and the
// system's reason, the bytes the checkpoint needs and the bytes free on the
// file system; the partial checkpoint is removed by then, and every other
// checkpoint of the run (including an older step_<step>) is untouched.
class CheckpointWriteError : public std::runtime_error {
 public:
  CheckpointWriteError(const std::string& what, uint64_t bytes_needed)
      : std::runtime_error(what), bytes_needed_(bytes_needed) {}
  uint64_t bytes_needed() const { return bytes_needed_; }

 private:
  uint64_t bytes_needed_;
};

// The bytes save_checkpoint writes for `data`: the tensors' bytes plus the
// safetensors headers (an upper estimate) and state.json.
uint64_t checkpoint_bytes(const CheckpointData& data);

// Writes run_dir/step_<step> (creating run_dir; replacing an existing
// step_<step>, which stays intact until the new one is complete) and returns
// its path. Throws CheckpointWriteError when a write fails; the temporary
// directory is removed then.
std::string save_checkpoint(const std::string& run_dir, int64_t step, const CheckpointData& data);

struct CheckpointLoadOptions {
  bool optimizer = true;     // false: optimizer.safetensors is neither read nor required (sampling, eval)
  bool require_ema = false;  // true: a missing ema.safetensors is an error; false: ema left empty
};

// Reads a checkpoint directory. Throws std::runtime_error naming the
// directory and the file when a part is missing, unreadable or (state.json)
// not valid JSON.
CheckpointData load_checkpoint(const std::string& dir, const CheckpointLoadOptions& opt = {});

// Complete checkpoints of a run as (step, path), ascending by step: the
// directories named step_<digits> that hold a state.json. An absent run_dir
// gives an empty list.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& run_dir);
// The complete checkpoint with the largest step, if any.
std::optional<std::string> latest_checkpoint(const std::string& run_dir);

// The files save_checkpoint writes into step_<N>/ (state.json first).
const std::vector<std::string>& checkpoint_file_names();
// The names in `dir` that are not checkpoint_file_names(), sorted (samples,
// grids, anything a user put there).
std::vector<std::string> files_not_of_checkpoint(const std::string& dir);

// A step_<N> directory whose checkpoint files were removed but which still
// holds `other` (names in it the checkpoint writer did not make).
struct KeptCheckpointDir {
  std::string dir;
  std::vector<std::string> other;
};

// Keeps the newest keep_last (>= 0) checkpoints and step `keep_step` (the
// best; -1: none); removes the other checkpoints and stale temporaries.
// Only a checkpoint's own files (checkpoint_file_names) are removed: a
// directory that then still holds other files (samples drawn into it, ...)
// is left in place and returned, for the caller to log; an empty one is
// removed. Saving over an existing step_<N> likewise carries its other files
// into the new checkpoint directory.
std::vector<KeptCheckpointDir> prune_checkpoints(const std::string& run_dir, int keep_last, int64_t keep_step);
// Removes the ".step_*" temporaries a crashed save left in run_dir. Call it
// only while no other process writes checkpoints into run_dir.
void remove_stale_checkpoint_temps(const std::string& run_dir);

}  // namespace vt
