// `veval top1 CONFIG.yaml ckpt=DIR [split=val] [ema=true] [prune_last=k] [key.path=value ...]`:
// top-1 / top-5 / mean cross-entropy of a vtrain checkpoint on a split of
// the config's data.root, with the DeiT eval transform of the config
// (model.img_size, data.crop_pct, data.dct_scaling; docs/recipes.md §2) and vtrain's
// own evaluation code (vision/evaluate.h): every sample counted exactly
// once, the ragged last batch included. eval.batch_size, data.workers and
// eval.max_images of the config apply (override them like any key).
// prune_last=k is the layer-pruning study of arXiv 2602.08064: the last k
// blocks are dropped (Backbone::set_active_depth(depth - k)), the final
// merge/norms and the head are kept.
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
  int64_t prune_last = 0;              // blocks dropped from the end, in [0, depth]
  std::vector<std::string> overrides;  // key.path=value for the config
};

// argv after "top1": CONFIG first, then key=value words; ckpt, split and ema
// and prune_last are veval's, everything else is a config override. Throws
// std::invalid_argument for a missing CONFIG or ckpt, a word without '=',
// ema not true/false, or prune_last not a non-negative integer.
Top1Request parse_top1_args(const std::vector<std::string>& args);

struct Top1Report {
  EvalResult result;
  std::string config_path, weights_file, split_dir;
  std::string device;  // DeviceChoice::describe() of the run
  int64_t num_classes = 0;
  int64_t blocks_run = 0, depth = 0;  // blocks evaluated (depth - prune_last) of the model's depth
};

// Loads config and checkpoint (eval/classifier_checkpoint.h) and evaluates.
// Errors (std::runtime_error naming the thing, or ConfigError): config not
// found / bad key; missing checkpoint or weights file; ema requested but
// absent; checkpoint not matching the config; a missing split folder; a
// split whose class folders differ from data.train_split's (labels would
// not mean the same classes); device: cuda without a visible GPU; prune_last
// above the model's depth (std::invalid_argument naming prune_last).
Top1Report run_top1(const Top1Request& req, const std::vector<std::string>& configs_dirs,
                    const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace vt
