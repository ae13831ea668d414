#include "diffusion/dit_train_config.h"

#include <filesystem>

namespace vt {

const ConfigSchema& dittrain_schema() {
  static const ConfigSchema s = [] {
    using T = ConfigType;
    ConfigSchema c;
    c.optional("run.name", T::String, "dit", "run directory name under run.out_dir")
        .optional("run.out_dir", T::String, "runs", "parent of run directories")
        .optional("run.seed", T::Int, "0", "seed of init, data order, noise, timesteps, label dropout")
        .optional("run.resume", T::String, "auto", "auto (newest complete checkpoint of the run) | none | DIR")
        .optional("model.preset", T::String, "~", "DiT-{S,B,L,XL}/{2,4,8}; sets depth/hidden/heads/patch")
        .optional("model.input_size", T::Int, "32", "H = W of the model input (latent 32 for 256px images)")
        .optional("model.in_channels", T::Int, "4", "input channels (4 latents, 3 pixels)")
        .optional("model.patch", T::Int, "2", "patch size (ignored with a preset)")
        .optional("model.hidden", T::Int, "384", "width D (ignored with a preset)")
        .optional("model.depth", T::Int, "12", "blocks (ignored with a preset)")
        .optional("model.heads", T::Int, "6", "attention heads (ignored with a preset)")
        .optional("model.mlp_ratio", T::Float, "4.0", "MLP hidden / D")
        .optional("model.num_classes", T::Int, "1000", "classes; the null class id is num_classes")
        .optional("model.class_dropout", T::Float, "0.1", "label -> null class probability in training")
        .optional("model.norm.scheme", T::String, "siamese", "pre | post | siamese")
        .optional("model.norm.normalized_input", T::Bool, "true", "siamese: keep norm_k on x + prenorm(y)")
        .optional("model.norm.depth_scaling", T::Bool, "true", "siamese: c_l = sqrt(2(l+1)) (else 1)")
        .optional("diffusion.num_timesteps", T::Int, "1000", "T of the linear schedule")
        .optional("diffusion.t0_term", T::String, "nll",
                  "VB term at t=0: nll (DiT; assumes pixels in [-1,1]) | kl | zero")
        .required("data.kind", T::String, "images (ImageFolder, ADM crop, [-1,1]) | latents (safetensors shards)")
        .required("data.root", T::String, "ImageFolder root, or the directory of latent shards")
        .optional("data.hflip", T::Bool, "true", "random horizontal flip")
        .optional("data.latent_scale", T::Float, "0.18215", "latents are multiplied by this (SD VAE)")
        .optional("data.workers", T::Int, "2", "loader threads")
        .optional("data.on_corrupt", T::String, "error", "error | skip")
        .optional("train.global_batch", T::Int, "256", "images per optimiser step")
        .optional("train.steps", T::Int, "400000", "optimiser steps")
        .optional("train.lr", T::Float, "1e-4", "AdamW learning rate (constant)")
        .optional("train.weight_decay", T::Float, "0.0", "AdamW weight decay")
        .optional("train.beta1", T::Float, "0.9", "AdamW beta1")
        .optional("train.beta2", T::Float, "0.999", "AdamW beta2")
        .optional("train.eps", T::Float, "1e-8", "AdamW eps")
        .optional("train.grad_clip", T::Float, "0.0", "max global grad norm (0: off, as DiT)")
        .optional("train.ema_decay", T::Float, "0.9999", "EMA decay per step")
        .optional("train.max_nonfinite", T::Int, "10", "abort after this many consecutive non-finite losses")
        .optional("log.every", T::Int, "100", "steps between metrics lines")
        .optional("ckpt.every", T::Int, "50000", "steps between checkpoints (and at the end)")
        .optional("sample.every", T::Int, "10000", "steps between EMA sample grids (0: off)")
        .optional("sample.num", T::Int, "16", "images in a periodic grid")
        .optional("sample.sampler", T::String, "ddim", "ddpm | ddim")
        .optional("sample.steps", T::Int, "50", "reverse steps")
        .optional("sample.eta", T::Float, "0.0", "DDIM eta")
        .optional("sample.cfg_scale", T::Float, "1.0", "classifier-free guidance scale (<= 1: none)")
        .optional("sample.guided_channels", T::Int, "-1", "-1: all noise channels; 3: DiT's behaviour")
        .optional("sample.clip_denoised", T::Bool, "false", "clip x0_hat to [-1, 1] (DiT: false)")
        .optional("sample.seed", T::Int, "0", "noise and label seed of samples")
        .optional("sample.batch", T::Int, "16", "images per model call");
    return c;
  }();
  return s;
}

namespace {
void check(bool ok, const std::string& key, const std::string& what) {
  if (!ok) throw ConfigError(key + ": " + what);
}
}  // namespace

Config dit_with_absolute_paths(const Config& in) {
  Config c = in;
  auto make_absolute = [&](const std::string& key) {
    const std::string v = in.get<std::string>(key);
    if (v.empty()) return;
    const std::string abs = std::filesystem::absolute(v).lexically_normal().string();
    if (abs != v) c.set_string(key, abs, in.source(key));
  };
  make_absolute("data.root");
  make_absolute("run.out_dir");
  const std::string resume = in.get<std::string>("run.resume");
  if (resume != "auto" && resume != "none") make_absolute("run.resume");
  return c;
}

DitTrainConfig dit_train_config(const Config& config) {
  // Every path below is absolute, and so is the resolved config the trainer
  // saves (t.yaml), which therefore works from any directory.
  const Config c = dit_with_absolute_paths(config);
  DitTrainConfig t;
  t.run_name = c.get<std::string>("run.name");
  t.out_dir = c.get<std::string>("run.out_dir");
  t.seed = static_cast<uint64_t>(c.get<int64_t>("run.seed"));
  t.resume = c.get<std::string>("run.resume");
  DiTConfig m;
  m.input_size = c.get<int64_t>("model.input_size");
  m.in_channels = c.get<int64_t>("model.in_channels");
  m.patch = c.get<int64_t>("model.patch");
  m.hidden = c.get<int64_t>("model.hidden");
  m.depth = c.get<int64_t>("model.depth");
  m.heads = c.get<int64_t>("model.heads");
  m.mlp_ratio = c.get<double>("model.mlp_ratio");
  m.num_classes = c.get<int64_t>("model.num_classes");
  m.class_dropout = c.get<double>("model.class_dropout");
  m.learn_sigma = true;
  try {
    m.scheme = norm_scheme_from_name(c.get<std::string>("model.norm.scheme"));
    if (c.has("model.preset")) m = dit_preset(c.get<std::string>("model.preset"), m);
    m.normalized_input = c.get<bool>("model.norm.normalized_input");
    m.depth_scaling = c.get<bool>("model.norm.depth_scaling");
    m.validate();
    t.t0_term = t0_term_from_name(c.get<std::string>("diffusion.t0_term"));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("model/diffusion: ") + e.what());
  }
  t.model = m;
  t.num_timesteps = c.get<int>("diffusion.num_timesteps");
  check(t.num_timesteps >= 2, "diffusion.num_timesteps", "must be >= 2");
  t.data_kind = c.get<std::string>("data.kind");
  check(t.data_kind == "images" || t.data_kind == "latents", "data.kind", "expected images | latents, got '" +
                                                                             t.data_kind + "'");
  t.data_root = c.get<std::string>("data.root");
  t.hflip = c.get<bool>("data.hflip");
  t.latent_scale = c.get<double>("data.latent_scale");
  t.workers = c.get<int>("data.workers");
  t.on_corrupt = c.get<std::string>("data.on_corrupt");
  t.batch = c.get<int64_t>("train.global_batch");
  check(t.batch > 0, "train.global_batch", "must be positive");
  t.steps = c.get<int64_t>("train.steps");
  t.lr = c.get<double>("train.lr");
  t.weight_decay = c.get<double>("train.weight_decay");
  t.beta1 = c.get<double>("train.beta1");
  t.beta2 = c.get<double>("train.beta2");
  t.adam_eps = c.get<double>("train.eps");
  t.grad_clip = c.get<double>("train.grad_clip");
  t.ema_decay = c.get<double>("train.ema_decay");
  check(t.ema_decay >= 0 && t.ema_decay <= 1, "train.ema_decay", "must be in [0, 1]");
  t.max_nonfinite = c.get<int>("train.max_nonfinite");
  t.log_every = std::max<int64_t>(1, c.get<int64_t>("log.every"));
  t.ckpt_every = c.get<int64_t>("ckpt.every");
  t.sample_every = c.get<int64_t>("sample.every");
  t.grid_images = c.get<int>("sample.num");
  t.grid.sampler = c.get<std::string>("sample.sampler");
  t.grid.steps = c.get<int>("sample.steps");
  t.grid.eta = c.get<double>("sample.eta");
  t.grid.cfg_scale = c.get<double>("sample.cfg_scale");
  t.grid.guided_channels = c.get<int>("sample.guided_channels");
  t.grid.clip_denoised = c.get<bool>("sample.clip_denoised");
  t.grid.seed = static_cast<uint64_t>(c.get<int64_t>("sample.seed"));
  t.grid.batch = c.get<int>("sample.batch");
  check(t.grid.sampler == "ddpm" || t.grid.sampler == "ddim", "sample.sampler",
        "expected ddpm | ddim, got '" + t.grid.sampler + "'");
  t.yaml = c.to_yaml();
  t.digest = c.digest_hex();
  return t;
}

}  // namespace vt
