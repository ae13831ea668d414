#include "diffusion/dit_train_config.h"

#include <cstdint>
#include <limits>
#include <vector>

#include "core/config_checks.h"
#include "core/config_paths.h"
#include "core/run_control.h"
#include "train/activation_checkpointing.h"
#include "train/cluster_keys.h"
#include "train/cuda_graph_key.h"
#include "train/device_choice.h"

namespace vt {

const ConfigSchema& dittrain_schema() {
  static const ConfigSchema s = [] {
    using T = ConfigType;
    ConfigSchema c;
    c.optional("name", T::String, "dit", "run name (letters, digits, - _ .): outputs go to <out_dir>/<name>/")
        .optional("out_dir", T::String, "runs", "parent of run directories (relative to the CWD)")
        .optional("device", T::String, "auto", "auto | cpu | cuda | cuda:N (auto: the GPU when one is visible)")
        .optional("precision", T::String, "auto", "auto | bf16 | fp32 | tf32 (auto: bf16 on a GPU, fp32 on the CPU)")
        .optional("seed", T::Int, "0", "seed of init, data order, noise, timesteps, label dropout")
        .optional("threads", T::Int, "0", "OpenMP threads for compute (0: library default; 0..1024)")
        .optional("resume", T::String, "auto", "auto (newest complete checkpoint of the run) | never (alias: none) | DIR")
        .optional("model.preset", T::String, "~", "DiT-{S,B,L,XL}/{2,4,8}: defaults of depth/hidden/heads/patch (keys given override it)")
        .optional("model.input_size", T::Int, "32", "H = W of the model input (latent 32 for 256px images)")
        .optional("model.in_channels", T::Int, "4", "input channels (4 latents, 3 pixels)")
        .optional("model.patch", T::Int, "2", "patch size (default: the preset's, when set)")
        .optional("model.hidden", T::Int, "384", "width D (default: the preset's, when set)")
        .optional("model.depth", T::Int, "12", "blocks (default: the preset's, when set)")
        .optional("model.heads", T::Int, "6", "attention heads (default: the preset's, when set)")
        .optional("model.mlp_ratio", T::Float, "4.0", "MLP hidden / D")
        .optional("model.num_classes", T::Int, "1000", "classes; the null class id is num_classes")
        .optional("model.class_dropout", T::Float, "0.1", "label -> null class probability in training")
        .optional("model.norm.scheme", T::String, "siamese", "pre | post | siamese | mixln | deepnorm | residual | hybrid | spannorm")
        .optional("model.norm.normalized_input", T::Bool, "true", "siamese: keep norm_k on x + prenorm(y)")
        .optional("model.norm.mixln_alpha", T::Float, "0.25", "mixln: fraction of leading Post-Norm blocks, in [0, 1]")
        .optional("model.norm.spannorm_alpha", T::Float, "~", "spannorm: scale of the spanning branch, > 0 (unset: 1/sqrt(depth))")
        .optional("model.norm.depth_scaling", T::Bool, "true", "siamese: c_l = sqrt(2(l+1)) (else 1)")
        .optional("diffusion.num_timesteps", T::Int, "1000", "T of the linear schedule")
        .optional("diffusion.t0_term", T::String, "nll",
                  "VB term at t=0: nll (DiT; assumes pixels in [-1,1]) | kl | zero")
        .required("data.kind", T::String, "images (ImageFolder, ADM crop, [-1,1]) | latents (safetensors shards)")
        .required("data.root", T::String, "ImageFolder root, or the directory of latent shards (relative: see the header)")
        .optional("data.hflip", T::Bool, "true", "random horizontal flip")
        .optional("data.latent_scale", T::Float, "0.18215", "latents are multiplied by this (SD VAE)")
        .optional("data.workers", T::Int, "2", "loader threads")
        .optional("data.on_corrupt", T::String, "error", "error | skip")
        .optional("vae.path", T::String, "~", "AutoencoderKL folder (diffusers) for extract and sample decoding")
        .optional("vae.precision", T::String, "auto",
                  "the VAE's arithmetic on the device key's device: auto (tf32 on CUDA, as DiT's sample.py; fp32 on "
                  "the CPU) | fp32 | tf32 (CUDA only) | bf16 (CUDA only: diffusers' vae.to(torch.bfloat16))")
        .optional("train.batch_size", T::Int, "256", "global batch size (images per optimiser step)")
        .optional("train.steps", T::Int, "400000", "optimiser steps")
        .optional("train.max_steps", T::Int, "~", "stop after this many steps, >= 1 (unset: train.steps; the run is resumable)")
        .optional("train.lr", T::Float, "1e-4", "AdamW learning rate (constant)")
        .optional("train.weight_decay", T::Float, "0.0", "AdamW weight decay")
        .optional("train.betas", T::FloatList, "[0.9, 0.999]", "AdamW betas")
        .optional("train.eps", T::Float, "1e-8", "AdamW eps")
        .optional("train.clip_grad", T::Float, "~", "max global grad norm (unset: no clipping, as DiT)")
        .optional("train.ema_decay", T::Float, "0.9999", "EMA decay per step")
        .optional("train.max_nonfinite", T::Int, "0", "non-finite loss/grad norm: 0 stops at once; N skips up to N in a row, then stops")
        .optional("train.allreduce_bucket_mb", T::Float, "25", "data-parallel gradient all-reduce buckets, MiB, as torch DDP bucket_cap_mb (GPU: each issued during the backward pass; 0: one all-reduce after it)")
        .optional("log.every_steps", T::Int, "100", "metrics.jsonl line (means since the last one) every N steps (0: off)")
        .optional("log.every_s", T::Float, "30", "plain progress line every N seconds (non-terminal)")
        .optional("log.tensorboard", T::Bool, "true", "TensorBoard event files in <run>/tb/")
        .optional("log.stream_rms", T::Bool, "false", "per-block RMS of the x/y streams (stream_rms/x/<l>, stream_rms/y/<l>) on each metrics line")
        .optional("log.norm_scales", T::Bool, "false", "mean |weight| of each affine LayerNorm (norm_scale/<name>) on each metrics line")
        .optional("ckpt.every_steps", T::Int, "50000", "checkpoint every N steps (0: off; the end always)")
        .optional("ckpt.keep_last", T::Int, "0", "complete checkpoints kept (0: all, as DiT)")
        .optional("sample.every", T::Int, "10000", "steps between EMA sample grids (0: off)")
        .optional("sample.num", T::Int, "16", "images in a periodic grid")
        .optional("sample.sampler", T::String, "ddim", "ddpm | ddim")
        .optional("sample.steps", T::Int, "50", "reverse steps")
        .optional("sample.eta", T::Float, "0.0", "DDIM eta")
        .optional("sample.cfg_scale", T::Float, "1.0", "classifier-free guidance scale (<= 1: none)")
        .optional("sample.guided_channels", T::Int, "-1", "-1: all noise channels; 3: DiT's behaviour")
        .optional("sample.clip_denoised", T::Bool, "false", "clip x0_hat to [-1, 1] (DiT: false)")
        .optional("sample.seed", T::Int, "0", "noise and label seed of samples")
        .optional("sample.batch", T::Int, "16", "images per model call")
        // The names before both trainers shared their keys.
        .renamed("train.global_batch", "train.batch_size")
        .renamed("train.beta1", "train.betas")
        .renamed("train.beta2", "train.betas")
        .renamed("train.grad_clip", "train.clip_grad")
        .renamed("log.every", "log.every_steps")
        .renamed("ckpt.every", "ckpt.every_steps");
    declare_activation_checkpointing(c);
    declare_cuda_graph(c);
    declare_cluster_keys(c);
    return c;
  }();
  return s;
}

namespace {

void check(const Config& c, bool ok, const std::string& key, const std::string& what) {
  if (!ok) bad_value(c, key, what);
}

}  // namespace

DitTrainConfig dit_train_config(const Config& config, const std::string& config_path) {
  // Every path below is absolute, and so is the resolved config the trainer
  // saves (t.resolved), which therefore works from any directory.
  PathKeys keys = trainer_path_keys(config);
  if (config.has("vae.path")) keys.file_relative.push_back("vae.path");  // relative to the config file, as data.root
  const Config c = with_absolute_paths(config, config_path, keys);
  DitTrainConfig t;
  t.run_name = run_name(c);
  t.out_dir = c.get<std::string>("out_dir");
  check(c, !t.out_dir.empty(), "out_dir", "must not be empty");
  t.compute = device_choice(c);  // the shared parser (train/device_choice.h)
  t.device = t.compute.device.str();
  t.seed = static_cast<uint64_t>(int_in(c, "seed", 0, INT64_MAX));
  t.threads = static_cast<int>(int_in(c, "threads", 0, 1024));
  t.resume = c.get<std::string>("resume");
  check(c, !t.resume.empty(), "resume", "expected auto | never | a checkpoint directory, got ''");
  if (t.resume == "none") t.resume = "never";  // the older word
  DiTConfig m;
  m.input_size = c.get<int64_t>("model.input_size");
  m.in_channels = c.get<int64_t>("model.in_channels");
  m.mlp_ratio = real_in(c, "model.mlp_ratio", 0, 64, /*open_lo=*/true);
  m.num_classes = c.get<int64_t>("model.num_classes");
  m.class_dropout = real_in(c, "model.class_dropout", 0, 1, false, /*open_hi=*/true);
  m.learn_sigma = true;
  m.mixln_alpha = real_in(c, "model.norm.mixln_alpha", 0, 1);
  try {
    m.scheme = norm_scheme_from_name(c.get<std::string>("model.norm.scheme"));
    // A preset gives the defaults of depth/hidden/heads/patch; a key given
    // in the config overrides it, as keyword arguments of DiT's
    // DiT_S_4(depth=...) do. Without a preset every key (defaults too) counts.
    const bool preset = c.has("model.preset");
    if (preset) m = dit_preset(c.get<std::string>("model.preset"), m);
    auto from_config = [&](const char* key) { return !preset || given(c, key); };
    if (from_config("model.patch")) m.patch = c.get<int64_t>("model.patch");
    if (from_config("model.hidden")) m.hidden = c.get<int64_t>("model.hidden");
    if (from_config("model.depth")) m.depth = c.get<int64_t>("model.depth");
    if (from_config("model.heads")) m.heads = c.get<int64_t>("model.heads");
    m.normalized_input = c.get<bool>("model.norm.normalized_input");
    m.depth_scaling = c.get<bool>("model.norm.depth_scaling");
    m.validate();
    t.t0_term = t0_term_from_name(c.get<std::string>("diffusion.t0_term"));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("model/diffusion: ") + e.what());
  }
  reject_unread(c, "model.norm.mixln_alpha", m.scheme == NormScheme::MixLN, "model.norm.scheme: mixln",
                DiTConfig{}.mixln_alpha);
  reject_unread(c, "model.norm.spannorm_alpha", m.scheme == NormScheme::SpanNorm, "model.norm.scheme: spannorm",
                std::numeric_limits<double>::quiet_NaN());
  if (c.has("model.norm.spannorm_alpha"))
    m.spannorm_alpha = real_in(c, "model.norm.spannorm_alpha", 0, std::numeric_limits<double>::infinity(),
                               /*open_lo=*/true);
  t.model = m;
  t.num_timesteps = static_cast<int>(int_in(c, "diffusion.num_timesteps", 2, 100000));
  t.data_kind = c.get<std::string>("data.kind");
  check(c, t.data_kind == "images" || t.data_kind == "latents", "data.kind",
        "expected images | latents, got '" + t.data_kind + "'");
  t.data_root = c.get<std::string>("data.root");
  check(c, !t.data_root.empty(), "data.root", "must not be empty");
  t.data_root_missing = missing_data_root_message(config, "data.root", config_path);
  t.hflip = c.get<bool>("data.hflip");
  t.latent_scale = real_in(c, "data.latent_scale", 0, 1e6, /*open_lo=*/true);
  if (c.has("vae.path")) t.vae_path = c.get<std::string>("vae.path");
  {
    const std::string vp = c.get<std::string>("vae.precision");
    if (vp == "auto") {
      t.vae_precision = t.compute.device.is_cuda() ? VaePrecision::Tf32 : VaePrecision::Fp32;
    } else {
      try {
        t.vae_precision = parse_vae_precision(vp);
      } catch (const std::invalid_argument&) {
        bad_value(c, "vae.precision", "expected auto | fp32 | tf32 | bf16, got '" + vp + "'");
      }
      check(c, t.vae_precision == VaePrecision::Fp32 || t.compute.device.is_cuda(), "vae.precision",
            "'" + vp + "' needs a CUDA device (device resolved to " + t.compute.device.str() +
                "; the CPU computes in fp32); use auto or fp32");
    }
  }
  t.workers = static_cast<int>(int_in(c, "data.workers", 0, 256));
  t.on_corrupt = c.get<std::string>("data.on_corrupt");
  check(c, t.on_corrupt == "error" || t.on_corrupt == "skip", "data.on_corrupt",
        "expected error | skip, got '" + t.on_corrupt + "'");
  t.batch = int_in(c, "train.batch_size", 1, 1 << 20);
  t.steps = int_in(c, "train.steps", 1, INT64_MAX);
  if (c.has("train.max_steps")) t.max_steps = int_in(c, "train.max_steps", 1, INT64_MAX);
  t.lr = real_in(c, "train.lr", 0, 1e3, /*open_lo=*/true);
  t.weight_decay = real_in(c, "train.weight_decay", 0, 1e3);
  const auto betas = c.get<std::vector<double>>("train.betas");
  check(c, betas.size() == 2 && betas[0] >= 0 && betas[0] < 1 && betas[1] >= 0 && betas[1] < 1, "train.betas",
        "expected [beta1, beta2] in [0, 1)");
  t.beta1 = betas[0], t.beta2 = betas[1];
  t.adam_eps = real_in(c, "train.eps", 0, 1, /*open_lo=*/true);
  if (c.has("train.clip_grad")) t.clip_grad = real_in(c, "train.clip_grad", 0, 1e30, /*open_lo=*/true);
  t.ema_decay = real_in(c, "train.ema_decay", 0, 1);
  t.max_nonfinite = static_cast<int>(int_in(c, "train.max_nonfinite", 0));
  t.allreduce_bucket_mb = real_in(c, "train.allreduce_bucket_mb", 0, 1e9);
  t.cuda_graph = cuda_graph_enabled(c);
  t.cluster = cluster_options(c);
  t.activation_checkpointing = activation_checkpointing(c);
  t.log_every_steps = int_in(c, "log.every_steps", 0, INT64_MAX);
  t.log_every_s = real_in(c, "log.every_s", 0, std::numeric_limits<double>::infinity());
  t.tensorboard = c.get<bool>("log.tensorboard");
  t.log_stream_rms = c.get<bool>("log.stream_rms");
  t.log_norm_scales = c.get<bool>("log.norm_scales");
  t.ckpt_every_steps = int_in(c, "ckpt.every_steps", 0, INT64_MAX);  // 0: only at the end
  t.keep_last = static_cast<int>(int_in(c, "ckpt.keep_last", 0));
  t.sample_every = int_in(c, "sample.every", 0, INT64_MAX);
  t.grid_images = static_cast<int>(int_in(c, "sample.num", 1, 1024));
  t.grid.num_timesteps = t.num_timesteps;
  t.grid.sampler = c.get<std::string>("sample.sampler");
  check(c, t.grid.sampler == "ddpm" || t.grid.sampler == "ddim", "sample.sampler",
        "expected ddpm | ddim, got '" + t.grid.sampler + "'");
  t.grid.steps = static_cast<int>(int_in(c, "sample.steps", 1, t.num_timesteps));
  t.grid.eta = real_in(c, "sample.eta", 0, 1e3);
  t.grid.cfg_scale = real_in(c, "sample.cfg_scale", 0, 1e3);
  t.grid.guided_channels = static_cast<int>(c.get<int64_t>("sample.guided_channels"));
  check(c, t.grid.guided_channels == -1 || (t.grid.guided_channels >= 1 && t.grid.guided_channels <= m.in_channels),
        "sample.guided_channels",
        "must be -1 or in [1, model.in_channels = " + std::to_string(m.in_channels) + "], got " +
            std::to_string(t.grid.guided_channels));
  t.grid.clip_denoised = c.get<bool>("sample.clip_denoised");
  t.grid.seed = static_cast<uint64_t>(int_in(c, "sample.seed", 0, INT64_MAX));
  t.grid.batch = static_cast<int>(int_in(c, "sample.batch", 1, 4096));
  t.resolved = c;
  if (c.has("model.preset")) {  // config.yaml records the model that trains
    const std::string src = "model.preset " + c.get<std::string>("model.preset");
    for (const auto& [key, value] : {std::pair<const char*, int64_t>{"model.patch", m.patch},
                                     {"model.hidden", m.hidden}, {"model.depth", m.depth}, {"model.heads", m.heads}})
      if (!given(c, key)) t.resolved.set(key, std::to_string(value), src);
  }
  t.digest = resume_digest(t.resolved);
  return t;
}

}  // namespace vt
