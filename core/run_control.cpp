#include "core/run_control.h"

namespace vt {

const std::vector<std::string>& run_control_keys() {
  static const std::vector<std::string> keys{
      "resume",          "train.max_steps",  "log",           "ckpt.every_steps", "ckpt.every_epochs",
      "ckpt.keep_last",  "ckpt.keep_best",   "eval",             "sample",  "threads",
      "device",          "precision",        "data.workers",  "data.prefetch",   "train.allreduce_bucket_mb",
      "train.activation_checkpointing", "train.cuda_graph",
      "data.augment_on",
      "run.stop_signals", "dist.timeout_s", "ckpt.on_write_error",
  };
  return keys;
}

std::string resume_digest(const Config& cfg) { return cfg.digest_hex(run_control_keys()); }

}  // namespace vt
