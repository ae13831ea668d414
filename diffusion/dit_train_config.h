// dittrain's configuration: the YAML schema (every key, type, default) and
// the typed struct the trainer reads. See configs/dit_l4.yaml for a full
// example and configs/cifar10_dit_siamese.yaml for a small one.
//
// Relative paths (core/config_paths.h), as vtrain: data.root and a resume
// directory written in a config FILE resolve against the parent of that
// file's directory (configs/x.yaml's `cifar10/train` is the repository's),
// and data.root is then looked up by name ($VT_DATA_DIR, data/,
// ../shared/data/); values given on the command line, and out_dir, resolve
// against the current directory. Key names and the run-control keys
// are those of vtrain (train.batch_size, train.betas, train.clip_grad,
// log.every_steps, ckpt.every_steps, ...); the older names are rejected with
// the new one named.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "core/config.h"
#include "diffusion/dit_model.h"
#include "train/cluster_keys.h"
#include "train/device_choice.h"
#include "diffusion/gaussian_diffusion.h"
#include "diffusion/sampler.h"
#include "vae/vae_precision.h"

namespace vt {

const ConfigSchema& dittrain_schema();

struct DitTrainConfig {
  std::string run_name, out_dir, device;  // device: compute.device.str()
  DeviceChoice compute;                    // the device and precision keys (train/device_choice.h)
  int threads = 0;
  std::string resume;  // "auto" | "never" (config word "none" is an alias) | an absolute step_<N> directory
  uint64_t seed = 0;
  DiTConfig model;
  int num_timesteps = 1000;
  T0Term t0_term = T0Term::Nll;
  // data
  std::string data_kind, data_root, on_corrupt;
  std::string data_root_missing;  // the error when data_root is no directory (core/config_paths.h)
  bool hflip = true;
  double latent_scale = 0.18215;
  std::string vae_path;  // vae.path: AutoencoderKL folder for extract/sample ("" = none)
  // vae.precision, resolved: auto is tf32 on CUDA, fp32 on the CPU (vae/vae_precision.h).
  VaePrecision vae_precision = VaePrecision::Fp32;
  int workers = 2;
  // optimisation
  int64_t batch = 256, steps = 400000;  // train.batch_size (global), train.steps
  std::optional<int64_t> max_steps;     // stop early (resumable)
  double lr = 1e-4, weight_decay = 0.0, beta1 = 0.9, beta2 = 0.999, adam_eps = 1e-8;
  std::optional<double> clip_grad;  // unset: no clipping
  double ema_decay = 0.9999;
  int max_nonfinite = 0;  // train/nonfinite.h
  double allreduce_bucket_mb = 25;  // train/loop.h LoopOptions
  bool cuda_graph = true;  // train.cuda_graph: auto (true) | off (train/cuda_graph_key.h)
  ClusterOptions cluster;  // run.stop_signals, dist.timeout_s, ckpt.on_write_error (train/cluster_keys.h)
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::None;  // train/activation_checkpointing.h
  // logging / checkpoints / periodic samples
  int64_t log_every_steps = 100, ckpt_every_steps = 50000, sample_every = 10000;
  double log_every_s = 30;
  bool tensorboard = true;
  bool log_stream_rms = false;   // stream_rms/{x,y}/<l> on each metrics line
  bool log_norm_scales = false;  // norm_scale/<name> on each metrics line
  int keep_last = 0;  // 0: keep every checkpoint
  SampleOptions grid;  // periodic grids
  int grid_images = 16;
  Config resolved;     // the config with absolute paths (saved as <run>/config.yaml)
  std::string digest;  // its resume digest (core/run_control.h)
};

// Reads a validated Config. Throws ConfigError naming the key (and where
// its value came from) for values that parse but make no sense: counts
// <= 0 (train.steps, train.batch_size, sample.num, sample.batch, ...),
// negative periods, train.lr <= 0 or non-finite, probabilities and decays
// outside [0, 1], sample.steps outside [1, diffusion.num_timesteps], unknown
// names (data.kind, sample.sampler, resume words, model.norm.scheme).
// Paths are made absolute first (with_absolute_trainer_paths); `resolved`
// and `digest` are those of the absolute-path config, so the run
// directory's config.yaml works from any directory.
DitTrainConfig dit_train_config(const Config& cfg, const std::string& config_path = "");

}  // namespace vt
