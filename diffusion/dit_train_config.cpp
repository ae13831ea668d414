#include "diffusion/dit_train_config.h"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <vector>

namespace vt {

const ConfigSchema& dittrain_schema() {
  static const ConfigSchema s = [] {
    using T = ConfigType;
    ConfigSchema c;
    c.optional("name", T::String, "dit", "run directory name under out_dir")
        .optional("out_dir", T::String, "runs", "parent of run directories (relative to the CWD)")
        .optional("seed", T::Int, "0", "seed of init, data order, noise, timesteps, label dropout")
        .optional("resume", T::String, "auto", "auto (newest complete checkpoint of the run) | never (alias: none) | DIR")
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
        .required("data.root", T::String, "ImageFolder root, or the directory of latent shards (relative: see the header)")
        .optional("data.hflip", T::Bool, "true", "random horizontal flip")
        .optional("data.latent_scale", T::Float, "0.18215", "latents are multiplied by this (SD VAE)")
        .optional("data.workers", T::Int, "2", "loader threads")
        .optional("data.on_corrupt", T::String, "error", "error | skip")
        .optional("vae.path", T::String, "~", "AutoencoderKL folder (diffusers) for extract and sample decoding")
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
namespace fs = std::filesystem;

[[noreturn]] void bad(const Config& c, const std::string& key, const std::string& what) {
  throw ConfigError(key + " (" + c.source(key) + "): " + what);
}

void check(const Config& c, bool ok, const std::string& key, const std::string& what) {
  if (!ok) bad(c, key, what);
}

template <typename T>
std::string str(T v) {
  std::ostringstream o;
  o << v;
  return o.str();
}

// Reads an int key and checks lo <= v <= hi.
int64_t int_in(const Config& c, const std::string& key, int64_t lo, int64_t hi = INT32_MAX) {
  const int64_t v = c.get<int64_t>(key);
  if (v < lo || v > hi)
    bad(c, key,
        (hi == INT64_MAX ? "must be >= " + std::to_string(lo)
                         : "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]") +
            ", got " + std::to_string(v));
  return v;
}

// Reads a float key and checks it is finite and lo <= v <= hi (open ends
// when lo_open / hi_open).
double float_in(const Config& c, const std::string& key, double lo, double hi, bool lo_open = false,
                bool hi_open = false) {
  const double v = c.get<double>(key);
  const bool ok = std::isfinite(v) && (lo_open ? v > lo : v >= lo) && (hi_open ? v < hi : v <= hi);
  if (!ok)
    bad(c, key, std::string("must be finite and in ") + (lo_open ? "(" : "[") + str(lo) + ", " + str(hi) +
                    (hi_open ? ")" : "]") + ", got " + str(v));
  return v;
}

bool is_resume_word(const std::string& r) { return r == "auto" || r == "never" || r == "none"; }

// See the header: file values relative to the parent of the config file's
// directory, command-line values (and parsed text) relative to the CWD.
std::string resolve_path(const Config& c, const std::string& key, const std::string& config_path) {
  const fs::path p(c.get<std::string>(key));
  if (p.is_absolute() || config_path.empty() || c.source(key) == "command line") return p.string();
  return (fs::absolute(config_path).parent_path().parent_path() / p).string();
}
}  // namespace

Config dit_with_absolute_paths(const Config& in, const std::string& config_path) {
  Config c = in;
  auto set = [&](const std::string& key, const std::string& path) {
    if (path.empty()) return;  // left for dit_train_config to report
    const std::string abs = fs::absolute(path).lexically_normal().string();
    if (abs != in.get<std::string>(key)) c.set_string(key, abs, in.source(key));
  };
  set("data.root", resolve_path(in, "data.root", config_path));
  set("out_dir", in.get<std::string>("out_dir"));
  if (in.has("vae.path")) set("vae.path", resolve_path(in, "vae.path", config_path));
  const std::string resume = in.get<std::string>("resume");
  if (!is_resume_word(resume)) set("resume", resolve_path(in, "resume", config_path));
  return c;
}

DitTrainConfig dit_train_config(const Config& config, const std::string& config_path) {
  // Every path below is absolute, and so is the resolved config the trainer
  // saves (t.yaml), which therefore works from any directory.
  const Config c = dit_with_absolute_paths(config, config_path);
  DitTrainConfig t;
  t.run_name = c.get<std::string>("name");
  check(c, !t.run_name.empty() && t.run_name.find('/') == std::string::npos && t.run_name != "." &&
               t.run_name != "..",
        "name", "must be a non-empty plain name, got '" + t.run_name + "'");
  t.out_dir = c.get<std::string>("out_dir");
  check(c, !t.out_dir.empty(), "out_dir", "must not be empty");
  t.seed = static_cast<uint64_t>(int_in(c, "seed", 0, INT64_MAX));
  t.resume = c.get<std::string>("resume");
  check(c, !t.resume.empty(), "resume", "expected auto | never | a checkpoint directory, got ''");
  if (t.resume == "none") t.resume = "never";  // the older word
  DiTConfig m;
  m.input_size = c.get<int64_t>("model.input_size");
  m.in_channels = c.get<int64_t>("model.in_channels");
  m.patch = c.get<int64_t>("model.patch");
  m.hidden = c.get<int64_t>("model.hidden");
  m.depth = c.get<int64_t>("model.depth");
  m.heads = c.get<int64_t>("model.heads");
  m.mlp_ratio = float_in(c, "model.mlp_ratio", 0, 64, /*lo_open=*/true);
  m.num_classes = c.get<int64_t>("model.num_classes");
  m.class_dropout = float_in(c, "model.class_dropout", 0, 1, false, /*hi_open=*/true);
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
  t.num_timesteps = static_cast<int>(int_in(c, "diffusion.num_timesteps", 2, 100000));
  t.data_kind = c.get<std::string>("data.kind");
  check(c, t.data_kind == "images" || t.data_kind == "latents", "data.kind",
        "expected images | latents, got '" + t.data_kind + "'");
  t.data_root = c.get<std::string>("data.root");
  check(c, !t.data_root.empty(), "data.root", "must not be empty");
  t.hflip = c.get<bool>("data.hflip");
  t.latent_scale = float_in(c, "data.latent_scale", 0, 1e6, /*lo_open=*/true);
  if (c.has("vae.path")) t.vae_path = c.get<std::string>("vae.path");
  t.workers = static_cast<int>(int_in(c, "data.workers", 0, 256));
  t.on_corrupt = c.get<std::string>("data.on_corrupt");
  check(c, t.on_corrupt == "error" || t.on_corrupt == "skip", "data.on_corrupt",
        "expected error | skip, got '" + t.on_corrupt + "'");
  t.batch = int_in(c, "train.global_batch", 1, 1 << 20);
  t.steps = int_in(c, "train.steps", 1, INT64_MAX);
  t.lr = float_in(c, "train.lr", 0, 1e3, /*lo_open=*/true);
  t.weight_decay = float_in(c, "train.weight_decay", 0, 1e3);
  t.beta1 = float_in(c, "train.beta1", 0, 1, false, /*hi_open=*/true);
  t.beta2 = float_in(c, "train.beta2", 0, 1, false, /*hi_open=*/true);
  t.adam_eps = float_in(c, "train.eps", 0, 1, /*lo_open=*/true);
  t.grad_clip = float_in(c, "train.grad_clip", 0, 1e30);
  t.ema_decay = float_in(c, "train.ema_decay", 0, 1);
  t.max_nonfinite = static_cast<int>(int_in(c, "train.max_nonfinite", 1));
  t.log_every = int_in(c, "log.every", 1, INT64_MAX);
  t.ckpt_every = int_in(c, "ckpt.every", 0, INT64_MAX);  // 0: only at the end
  t.sample_every = int_in(c, "sample.every", 0, INT64_MAX);
  t.grid_images = static_cast<int>(int_in(c, "sample.num", 1, 1024));
  t.grid.num_timesteps = t.num_timesteps;
  t.grid.sampler = c.get<std::string>("sample.sampler");
  check(c, t.grid.sampler == "ddpm" || t.grid.sampler == "ddim", "sample.sampler",
        "expected ddpm | ddim, got '" + t.grid.sampler + "'");
  t.grid.steps = static_cast<int>(int_in(c, "sample.steps", 1, t.num_timesteps));
  t.grid.eta = float_in(c, "sample.eta", 0, 1e3);
  t.grid.cfg_scale = float_in(c, "sample.cfg_scale", 0, 1e3);
  t.grid.guided_channels = static_cast<int>(c.get<int64_t>("sample.guided_channels"));
  check(c, t.grid.guided_channels == -1 || (t.grid.guided_channels >= 1 && t.grid.guided_channels <= m.in_channels),
        "sample.guided_channels",
        "must be -1 or in [1, model.in_channels = " + std::to_string(m.in_channels) + "], got " +
            std::to_string(t.grid.guided_channels));
  t.grid.clip_denoised = c.get<bool>("sample.clip_denoised");
  t.grid.seed = static_cast<uint64_t>(int_in(c, "sample.seed", 0, INT64_MAX));
  t.grid.batch = static_cast<int>(int_in(c, "sample.batch", 1, 4096));
  t.yaml = c.to_yaml();
  t.digest = c.digest_hex();
  return t;
}

std::string dit_find_config(const std::string& arg, const std::string& configs_dir) {
  std::vector<std::string> tried;
  for (const std::string& cand : {arg, configs_dir + "/" + arg, configs_dir + "/" + arg + ".yaml"}) {
    if (!tried.empty() && fs::path(arg).is_absolute()) break;
    tried.push_back(cand);
    if (fs::is_directory(cand))
      throw ConfigError("config '" + arg + "': '" + cand + "' is a directory, expected a YAML file");
    if (fs::is_regular_file(cand)) return cand;
  }
  std::string msg = "config '" + arg + "' not found (tried:";
  for (const auto& t : tried) msg += " " + t;
  throw ConfigError(msg + ")");
}

}  // namespace vt
