// state.json of a checkpoint (core/checkpoint_dir.h), one layout for vtrain
// and dittrain:
//   {"step": optimizer-loop steps done (skipped non-finite steps included),
//    "epoch": epochs done, "batch_in_epoch": batches of the current epoch done,
//    "optimizer": {"kind": "adamw", "step": AdamW updates applied},
//    "config_digest": core/run_control.h resume_digest, "seed": ...,
//    "nonfinite_skipped": ..., plus trainer extras (best top-1, sampler, model)}
// Older checkpoints that stored "optimizer_steps" (dittrain) or no
// optimizer step (vtrain: equal to "step") are still read.
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace vt {

struct RunPosition {
  int64_t step = 0, epoch = 0, batch_in_epoch = 0;
  int64_t optimizer_steps = 0;
  int64_t nonfinite_skipped = 0;
  uint64_t seed = 0;
  std::string config_digest;
};

// The common fields; trainers add their extras to the returned object.
nlohmann::json run_state_json(const RunPosition& p);

// Reads the common fields of `state` (from checkpoint `dir`). Throws
// std::runtime_error "checkpoint '<dir>': state.json: ..." for a missing or
// mistyped field.
RunPosition read_run_state(const nlohmann::json& state, const std::string& dir);

}  // namespace vt
