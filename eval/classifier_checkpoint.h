// A trained vtrain classifier for veval: the model a vtrain config
// describes, with the weights of one checkpoint (core/checkpoint_dir.h)
// loaded strictly. Shared by `veval top1` and `veval fid --features`.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "vision/train_config.h"
#include "vision/vit.h"

namespace vt {

struct LoadedClassifier {
  TrainOptions options;                      // of the config; vit.num_classes resolved
  std::unique_ptr<VisionTransformer> model;  // CPU, weights loaded
  std::string weights_file;                  // the .safetensors read
  std::string checkpoint_dir;                // the step_<N>/ it came from ("" for a plain file)
};

// The config `config_arg` (a path, else a name in one of `configs_dirs`, as
// vtrain looks it up: core/config_paths.h) loaded with vtrain's schema and `overrides` ("key.path=value").
// Throws ConfigError naming the file/key.
struct FoundConfig {
  Config cfg;
  std::string path;
};
FoundConfig load_vtrain_config(const std::string& config_arg, const std::vector<std::string>& configs_dirs,
                               const std::vector<std::string>& overrides = {});

// load_vtrain_config for the checkpoint `ckpt` (as load_classifier takes
// it): when the config is no vtrain config and the checkpoint holds weights
// of another kind (a dittrain DiT, core/checkpoint_kind.h), the error says
// what the checkpoint is (std::runtime_error naming both files) instead of
// listing the config's keys unknown to vtrain.
FoundConfig load_vtrain_config_for(const std::string& ckpt, bool ema, const std::string& config_arg,
                                   const std::vector<std::string>& configs_dirs,
                                   const std::vector<std::string>& overrides = {});

// `ckpt` is a checkpoint directory step_<N>/ (reads model.safetensors, or
// ema.safetensors when `ema`), a run directory (its newest complete
// step_<N>/) or a .safetensors file itself (`ema` must then be false). model.num_classes 0 in the config (= "from the dataset" in
// vtrain) is taken from head.weight's rows. Errors (std::runtime_error, each
// naming the path): a missing checkpoint directory or weights file; ema
// requested but ema.safetensors absent; weights of another kind (a DiT, an
// optimizer file, a VAE: core/checkpoint_kind.h) named as such; a checkpoint
// that does not fit the config (the first few missing, unexpected and
// mis-shaped tensors, and the run's config.yaml when the checkpoint's run
// has one other than `config_path`).
LoadedClassifier load_classifier(const Config& cfg, const std::string& config_path, const std::string& ckpt,
                                 bool ema);

// vtrain's resolved config.yaml of the run a checkpoint belongs to
// (<run>/step_<N>/ -> <run>/config.yaml; also for <run> itself and for a
// weights file inside step_<N>/) when it exists, else "".
std::string run_config_of_checkpoint(const std::string& ckpt);

}  // namespace vt
