// `veval top1 CONFIG.yaml ckpt=DIR [split=val] [ema=true] [key.path=value ...]`:
// top-1 / top-5 / mean cross-entropy of a vtrain checkpoint on a split of
// the config's data.root, with the DeiT eval transform of the config
// (model.img_size, data.crop_pct, data.dct_scaling; docs/recipes.md §2) and vtrain's
// own evaluation code (vision/evaluate.h): every sample counted exactly
// once, the ragged last batch included. eval.batch_size, data.workers and
// eval.max_images of the config apply (override them like any key).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "vision/evaluate.h"

namespace vt {

struct Top1Request {
  std::string config;                  // path or name in configs/
  std::string ckpt;                    // step_<N>/, a run directory, or a .safetensors file
  std::string split = "val";           // val = data.val_split, train = data.train_split, else a folder of data.root
  bool ema = false;                    // ema.safetensors instead of model.safetensors
  std::vector<std::string> overrides;  // key.path=value for the config
};

// argv after "top1": CONFIG first, then key=value words; ckpt, split and ema
// are veval's, everything else is a config override. Throws
// std::invalid_argument for a missing CONFIG or ckpt, a word without '=',
// or ema not true/false.
Top1Request parse_top1_args(const std::vector<std::string>& args);

struct Top1Report {
  EvalResult result;
  std::string config_path, weights_file, split_dir;
  int64_t num_classes = 0;
};

// Loads config and checkpoint (eval/classifier_checkpoint.h) and evaluates.
// Errors (std::runtime_error naming the thing, or ConfigError): config not
// found / bad key; missing checkpoint or weights file; ema requested but
// absent; checkpoint not matching the config; a missing split folder; a
// split whose class folders differ from data.train_split's (labels would
// not mean the same classes); device: cuda (not supported yet).
Top1Report run_top1(const Top1Request& req, const std::vector<std::string>& configs_dirs,
                    const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace vt
