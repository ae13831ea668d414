// dittrain's configuration: the YAML schema (every key, type, default) and
// the typed struct the trainer reads. See configs/dit_l4.yaml for a full
// example and configs/cifar10_dit_siamese.yaml for a small one.
//
// Relative paths follow vtrain (vision/train_config.h): data.root and a
// resume directory written in a config FILE resolve against the parent
// of that file's directory (configs/x.yaml says `../shared/data/cifar10`
// relative to the repository root); values given on the command line, and
// out_dir, resolve against the current directory.
#pragma once
#include <cstdint>
#include <string>

#include "core/config.h"
#include "diffusion/dit_model.h"
#include "diffusion/gaussian_diffusion.h"
#include "diffusion/sampler.h"

namespace vt {

const ConfigSchema& dittrain_schema();

struct DitTrainConfig {
  std::string run_name, out_dir;
  std::string resume;  // "auto" | "never" (config word "none" is an alias) | an absolute step_<N> directory
  uint64_t seed = 0;
  DiTConfig model;
  int num_timesteps = 1000;
  T0Term t0_term = T0Term::Nll;
  // data
  std::string data_kind, data_root, on_corrupt;
  bool hflip = true;
  double latent_scale = 0.18215;
  std::string vae_path;  // vae.path: AutoencoderKL folder for extract/sample ("" = none)
  int workers = 2;
  // optimisation
  int64_t batch = 256, steps = 400000;
  double lr = 1e-4, weight_decay = 0.0, beta1 = 0.9, beta2 = 0.999, adam_eps = 1e-8, grad_clip = 0.0;
  double ema_decay = 0.9999;
  int max_nonfinite = 10;
  // logging / checkpoints / periodic samples
  int64_t log_every = 100, ckpt_every = 50000, sample_every = 10000;
  SampleOptions grid;  // periodic grids
  int grid_images = 16;
  std::string yaml;    // the resolved config
  std::string digest;  // its digest (hex)
};

// The config with its path-valued keys (data.root, out_dir, resume
// when it names a directory) made absolute under the rules above;
// `config_path` is the file the config was loaded from. With an empty
// config_path (a config parsed from text) file values resolve against the
// current directory too. Idempotent: absolute values are kept.
Config dit_with_absolute_paths(const Config& cfg, const std::string& config_path = "");

// Reads a validated Config. Throws ConfigError naming the key (and where
// its value came from) for values that parse but make no sense: counts
// <= 0 (train.steps, train.global_batch, sample.num, sample.batch, ...),
// negative periods, train.lr <= 0 or non-finite, probabilities and decays
// outside [0, 1], sample.steps outside [1, diffusion.num_timesteps], unknown
// names (data.kind, sample.sampler, resume words, model.norm.scheme).
// Paths are made absolute first (dit_with_absolute_paths); `yaml` and
// `digest` are those of the absolute-path config, so the run directory's
// config.yaml works from any directory.
DitTrainConfig dit_train_config(const Config& cfg, const std::string& config_path = "");

// `dittrain CONFIG`: the path as given, else <configs_dir>/CONFIG, else
// <configs_dir>/CONFIG.yaml. Throws ConfigError listing the places tried, or
// saying that CONFIG is a directory.
std::string dit_find_config(const std::string& arg, const std::string& configs_dir);

}  // namespace vt
