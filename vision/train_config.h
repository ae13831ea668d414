// vtrain's configuration: the YAML schema (defaults = the DeiT ImageNet
// recipe, docs/recipes.md §2-7) and its typed form.
//
// Relative paths (core/config_paths.h): data.root (and a resume directory)
// given in a config FILE resolve against the parent of that file's
// directory, so configs/x.yaml can say `data.root: cifar10` relative to the
// repository root, and data.root is then looked up by name ($VT_DATA_DIR,
// data/, ../shared/data/; resolve_data_root); values given on the command
// line resolve against the current directory, as does out_dir
// (with_absolute_trainer_paths makes them absolute).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config.h"
#include "data_pipeline/decode_mode.h"
#include "train/cluster_keys.h"
#include "train/device_choice.h"
#include "vision/lr_schedule.h"
#include "vision/vit.h"

namespace vt {

const ConfigSchema& vtrain_schema();

struct TrainOptions {
  std::string name, out_dir;
  DeviceChoice compute;  // device and precision keys (train/device_choice.h)
  uint64_t seed = 0;
  int threads = 0;
  // model
  std::string preset;
  // Architecture keys given over a preset, each with where it came from and
  // the preset's value: "model.preset deit_tiny (command line): overridden
  // by model.dim = 96 (x.yaml:19; the preset's 192), model.depth = 2 (command
  // line; the preset's 12)"; "" when none is (or preset custom). The trainer
  // says it at the start, as a warning when a key comes from another place
  // than the preset (a preset on the command line over a file's model.dim).
  std::string preset_overrides;
  bool preset_overridden_elsewhere = false;
  VitConfig vit;  // num_classes 0 = take from the dataset
  float drop_path = 0.1f;
  // data
  std::string data_root, train_split, val_split, on_corrupt;
  std::string data_format = "folder";  // folder | shards (data_pipeline/shard_dataset.h)
  int workers = 2, prefetch = 4;
  double crop_pct = 0.875;
  std::vector<double> rrc_scale, rrc_ratio;
  bool hflip = true, rand_augment = true, dct_scaling = true;
  DecodeMode decode = DecodeMode::Full;  // data.decode (data_pipeline/decode_mode.h)
  // data.augment_on: false = host (the loader's workers augment each
  // sample); true = device: the workers stop at the uint8 crop and its plan
  // (data_pipeline/augment_plan.h), the batch travels as uint8 (uploaded so
  // on a GPU) and the trainer applies the batch's plans on the model's
  // device before Mixup/CutMix (kernels/augment.h augment_apply; CPU runs:
  // its CPU twins).
  // auto (augment_on_auto): device on CUDA, host on CPU; the trainer falls
  // back to host where device cannot run (several GPU processes mixing the
  // global batch on the host).
  bool augment_on_device = false, augment_on_auto = true;
  // data.decode_on: false = host (the loader's workers decode); true =
  // device: the workers read each JPEG and draw its crop box and plan, and
  // nvJPEG decodes the batch on the GPU, where it is cropped, resized and
  // augmented (data_pipeline/device/device_batch_decode.h). Needs CUDA,
  // augmentation on the device and data.decode: full.
  bool decode_on_device = false;
  int randaug_ops = 2;
  double randaug_magnitude = 9, randaug_std = 0.5;
  double erasing_prob = 0.25;
  int repeated_aug = 3;  // 1: plain shuffle
  double mixup_alpha = 0.8, cutmix_alpha = 1.0, mixup_prob = 1.0, mixup_switch_prob = 0.5;
  // train
  int64_t epochs = 300;
  int64_t batch_size = 1024;
  double lr = 0;  // resolved: base_lr * batch / lr_batch_div unless train.lr set
  LrSchedule sched;
  double weight_decay = 0.05, beta1 = 0.9, beta2 = 0.999, adam_eps = 1e-8;
  double label_smoothing = 0.1;
  std::optional<double> clip_grad;
  bool ema = true;
  double ema_decay = 0.99996;
  std::optional<int64_t> max_steps;
  int max_nonfinite = 0;  // train/nonfinite.h
  double allreduce_bucket_mb = 25;  // train/loop.h LoopOptions
  bool cuda_graph = true;  // train.cuda_graph: auto (true) | off (train/cuda_graph_key.h)
  ClusterOptions cluster;  // run.stop_signals, dist.timeout_s, ckpt.on_write_error (train/cluster_keys.h)
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::None;  // train/activation_checkpointing.h
  // eval
  int64_t eval_every_epochs = 1, eval_batch_size = 256;
  bool eval_ema = true;
  std::optional<int64_t> eval_max_images;
  // Train on this many evenly spaced images of the train split (class
  // folders are sorted, so the subset keeps the class balance); a short run
  // with a whole cosine schedule and several evaluations (the norm-comparison
  // grid) uses it.
  std::optional<int64_t> max_train_images;
  // checkpoints
  int64_t ckpt_every_epochs = 1, ckpt_every_steps = 0;
  int keep_last = 3;
  bool keep_best = true;
  std::string resume;  // "auto" | "never" (config may say "none") | a checkpoint directory
  // logging
  int64_t log_every_steps = 50;
  double log_every_s = 30;
  bool tensorboard = true;
  bool log_stream_rms = false;   // stream_rms/{x,y}/<l> on each metrics line
  bool log_norm_scales = false;  // norm_scale/<name> at each evaluation

  bool mixing() const { return mixup_prob > 0 && (mixup_alpha > 0 || cutmix_alpha > 0); }
};

// Reads a loaded config; `config_path` is the file it came from (for
// relative paths). Throws ConfigError naming the key for values that parse
// but make no sense: every number is range-checked (sizes that must fit an
// int, probabilities in [0, 1], positive finite lr, ...), the model shape is
// validated (heads | dim, patch | img_size), name must be a plain path
// component, device=cuda without a visible GPU and precision=bf16 on the CPU
// are refused (train/device_choice.h). All of this
// happens before a run directory exists.
// model.preset (deit_tiny | deit_small | deit_base) sets patch_size, dim,
// depth, heads and mlp_ratio; each of these keys given in the config (file,
// _base_ or command line) overrides the preset, as keyword arguments do in
// timm's constructors. model.preset: custom takes all five from their keys.
TrainOptions train_options(const Config& cfg, const std::string& config_path);

// Writes into `cfg` the architecture keys a preset set (those not given),
// with source "model.preset <name>", so the run's config.yaml records the
// model that trained; a config with every key given is left as it is.
void record_architecture(Config& cfg, const TrainOptions& o);

}  // namespace vt
