// dittrain's configuration: the YAML schema (every key, type, default) and
// the typed struct the trainer reads. See configs/dit_l4.yaml for a full
// example and configs/cifar10_dit_siamese.yaml for a small one.
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
  std::string run_name, out_dir, resume;  // resume: "auto" | "none" | a step_<N> directory
  uint64_t seed = 0;
  DiTConfig model;
  int num_timesteps = 1000;
  T0Term t0_term = T0Term::Nll;
  // data
  std::string data_kind, data_root, on_corrupt;
  bool hflip = true;
  double latent_scale = 0.18215;
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

// The config with its path-valued keys (data.root, run.out_dir, run.resume
// when it names a directory) made absolute against the current directory,
// which is what relative paths in a dittrain config mean. Idempotent.
Config dit_with_absolute_paths(const Config& cfg);

// Reads a validated Config (throws ConfigError naming the key on bad values).
// Paths are made absolute first (dit_with_absolute_paths); `yaml` and
// `digest` are those of the absolute-path config.
DitTrainConfig dit_train_config(const Config& cfg);

}  // namespace vt
