#include "vision/train_config.h"

#include <filesystem>

namespace vt {

namespace fs = std::filesystem;

const ConfigSchema& vtrain_schema() {
  static const ConfigSchema schema = [] {
    ConfigSchema s;
    using T = ConfigType;
    s.optional("name", T::String, "vtrain", "run name: outputs go to <out_dir>/<name>/")
        .optional("out_dir", T::String, "runs", "parent of run directories (relative to the CWD)")
        .optional("device", T::String, "auto", "auto | cpu | cuda")
        .optional("seed", T::Int, "0", "seed of every random stream (init, data order, augmentation, drop-path)")
        .optional("threads", T::Int, "0", "OpenMP threads for compute (0: library default)")
        .optional("model.preset", T::String, "deit_small", "deit_tiny | deit_small | deit_base | custom")
        .optional("model.img_size", T::Int, "224", "input resolution")
        .optional("model.patch_size", T::Int, "16", "patch size (custom preset)")
        .optional("model.dim", T::Int, "384", "embedding width (custom preset)")
        .optional("model.depth", T::Int, "12", "blocks (custom preset)")
        .optional("model.heads", T::Int, "6", "attention heads (custom preset)")
        .optional("model.mlp_ratio", T::Float, "4.0", "MLP hidden / dim (custom preset)")
        .optional("model.qkv_bias", T::Bool, "true", "bias on the qkv projection")
        .optional("model.num_classes", T::Int, "0", "classes (0: number of class folders)")
        .optional("model.drop_path", T::Float, "0.1", "stochastic depth, linear over blocks from 0")
        .optional("model.norm.scheme", T::String, "siamese", "pre | post | siamese")
        .optional("model.norm.normalized_input", T::Bool, "true", "siamese: keep input_norm_k")
        .optional("model.norm.depth_scaling", T::Bool, "true", "siamese: c_l = sqrt(2(l+1)) (else 1)")
        .required("data.root", T::String, "folder with <train_split>/ and <val_split>/ class folders")
        .optional("data.train_split", T::String, "train", "training sub-folder")
        .optional("data.val_split", T::String, "val", "validation sub-folder")
        .optional("data.workers", T::Int, "8", "loader threads")
        .optional("data.prefetch", T::Int, "4", "ready batches buffered")
        .optional("data.on_corrupt", T::String, "error", "error | skip")
        .optional("data.crop_pct", T::Float, "0.875", "eval: resize to int(img_size / crop_pct), center crop")
        .optional("data.rrc_scale", T::FloatList, "[0.08, 1.0]", "RandomResizedCrop area range")
        .optional("data.rrc_ratio", T::FloatList, "[0.75, 1.3333333333333333]", "RandomResizedCrop aspect range")
        .optional("data.hflip", T::Bool, "true", "random horizontal flip")
        .optional("data.dct_scaling", T::Bool, "true", "JPEG DCT-domain downscaling")
        .optional("data.rand_augment", T::Bool, "true", "RandAugment rand-m9-mstd0.5-inc1")
        .optional("data.randaug_ops", T::Int, "2", "RandAugment ops per image")
        .optional("data.randaug_magnitude", T::Float, "9", "RandAugment magnitude m")
        .optional("data.randaug_mstd", T::Float, "0.5", "RandAugment magnitude std")
        .optional("data.random_erasing", T::Float, "0.25", "RandomErasing probability (0: off)")
        .optional("data.repeated_aug", T::Int, "3", "RASampler repeats (<= 1: plain shuffle)")
        .optional("data.mixup", T::Float, "0.8", "Mixup alpha (0: off)")
        .optional("data.cutmix", T::Float, "1.0", "CutMix alpha (0: off)")
        .optional("data.mixup_prob", T::Float, "1.0", "probability of mixing a batch (0: mixing off)")
        .optional("data.mixup_switch_prob", T::Float, "0.5", "probability of CutMix when both are on")
        .optional("train.epochs", T::Int, "300", "epochs")
        .optional("train.batch_size", T::Int, "1024", "global batch size")
        .optional("train.base_lr", T::Float, "5e-4", "lr per lr_batch_div images: lr = base_lr * batch / div")
        .optional("train.lr_batch_div", T::Int, "512", "linear scaling rule denominator")
        .optional("train.lr", T::Float, "~", "absolute peak lr (overrides the scaling rule)")
        .optional("train.warmup_epochs", T::Float, "5", "linear warmup epochs")
        .optional("train.warmup_lr", T::Float, "1e-6", "lr at t = 0")
        .optional("train.min_lr", T::Float, "1e-5", "lr floor of the cosine")
        .optional("train.deit_epoch_lr", T::Bool, "false", "compatibility: DeiT's per-epoch lr (epoch e at lr(e-1))")
        .optional("train.weight_decay", T::Float, "0.05", "AdamW decoupled weight decay")
        .optional("train.betas", T::FloatList, "[0.9, 0.999]", "AdamW betas")
        .optional("train.eps", T::Float, "1e-8", "AdamW eps")
        .optional("train.label_smoothing", T::Float, "0.1", "label smoothing")
        .optional("train.clip_grad", T::Float, "~", "max global grad norm (unset: no clipping)")
        .optional("train.ema", T::Bool, "true", "model EMA")
        .optional("train.ema_decay", T::Float, "0.99996", "EMA decay per step")
        .optional("train.max_steps", T::Int, "~", "stop after this many optimizer steps (the schedule is unchanged)")
        .optional("eval.every_epochs", T::Int, "1", "evaluate every N epochs (and at the end)")
        .optional("eval.batch_size", T::Int, "256", "evaluation batch size")
        .optional("eval.ema", T::Bool, "true", "also evaluate the EMA weights")
        .optional("eval.max_images", T::Int, "~", "evaluate N evenly spaced val images (unset: all)")
        .optional("ckpt.every_epochs", T::Int, "1", "checkpoint every N epochs (0: off; the end always)")
        .optional("ckpt.every_steps", T::Int, "0", "also checkpoint every N steps (0: off)")
        .optional("ckpt.keep_last", T::Int, "3", "complete checkpoints kept (plus the best)")
        .optional("ckpt.keep_best", T::Bool, "true", "keep the checkpoint with the best top-1")
        .optional("resume", T::String, "auto", "auto (newest complete checkpoint of the run) | never | DIR")
        .optional("log.every_steps", T::Int, "50", "metrics.jsonl line every N steps")
        .optional("log.every_s", T::Float, "30", "plain progress line every N seconds (non-terminal)")
        .optional("log.tensorboard", T::Bool, "true", "TensorBoard event files in <run>/tb/");
    return s;
  }();
  return schema;
}

namespace {

[[noreturn]] void bad(const Config& c, const std::string& key, const std::string& what) {
  throw ConfigError(key + " (" + c.source(key) + "): " + what);
}

// See the header: file values relative to the config file's directory's
// parent, command-line values relative to the CWD.
std::string resolve_path(const Config& c, const std::string& key, const std::string& config_path) {
  fs::path p(c.get<std::string>(key));
  if (p.is_absolute() || c.source(key) == "command line") return p.lexically_normal().string();
  fs::path cfg_dir = fs::absolute(fs::path(config_path)).parent_path();
  return (cfg_dir.parent_path() / p).lexically_normal().string();
}

}  // namespace

Config with_absolute_paths(const Config& c, const std::string& config_path) {
  Config out = c;
  // resolve_path leaves command-line values relative to the CWD.
  auto set = [&](const std::string& key, const std::string& path) {
    if (path.empty()) return;  // left for train_options to report
    const std::string abs = fs::absolute(path).lexically_normal().string();
    if (abs != c.get<std::string>(key)) out.set_string(key, abs, c.source(key));
  };
  set("data.root", resolve_path(c, "data.root", config_path));
  set("out_dir", c.get<std::string>("out_dir"));
  const std::string resume = c.get<std::string>("resume");
  if (resume != "auto" && resume != "never") set("resume", resolve_path(c, "resume", config_path));
  return out;
}

TrainOptions train_options(const Config& c, const std::string& config_path) {
  TrainOptions o;
  o.name = c.get<std::string>("name");
  if (o.name.empty() || o.name.find('/') != std::string::npos) bad(c, "name", "must be a non-empty plain name");
  o.out_dir = c.get<std::string>("out_dir");
  o.device = c.get<std::string>("device");
  if (o.device != "auto" && o.device != "cpu" && o.device != "cuda")
    bad(c, "device", "expected auto | cpu | cuda, got '" + o.device + "'");
  o.seed = static_cast<uint64_t>(c.get<int64_t>("seed"));
  o.threads = c.get<int>("threads");

  NormScheme scheme;
  try {
    scheme = norm_scheme_from_name(c.get<std::string>("model.norm.scheme"));
  } catch (const std::invalid_argument& e) {
    bad(c, "model.norm.scheme", "expected pre | post | siamese, got '" + c.get<std::string>("model.norm.scheme") + "'");
  }
  o.preset = c.get<std::string>("model.preset");
  o.drop_path = c.get<float>("model.drop_path");
  if (o.drop_path < 0 || o.drop_path >= 1) bad(c, "model.drop_path", "must be in [0, 1)");
  if (o.preset == "custom") {
    o.vit.patch_size = c.get<int64_t>("model.patch_size");
    o.vit.backbone.dim = c.get<int64_t>("model.dim");
    o.vit.backbone.depth = c.get<int64_t>("model.depth");
    o.vit.backbone.heads = c.get<int64_t>("model.heads");
    o.vit.backbone.mlp_ratio = c.get<double>("model.mlp_ratio");
  } else {
    try {
      o.vit = vit_preset(o.preset);
    } catch (const std::invalid_argument&) {
      bad(c, "model.preset", "expected deit_tiny | deit_small | deit_base | custom, got '" + o.preset + "'");
    }
  }
  o.vit.img_size = c.get<int64_t>("model.img_size");
  o.vit.num_classes = c.get<int64_t>("model.num_classes");
  o.vit.backbone.variant = ModelVariant::DeiT;
  o.vit.backbone.scheme = scheme;
  o.vit.backbone.qkv_bias = c.get<bool>("model.qkv_bias");
  o.vit.backbone.normalized_input = c.get<bool>("model.norm.normalized_input");
  o.vit.backbone.depth_scaling = c.get<bool>("model.norm.depth_scaling");
  if (o.vit.backbone.depth <= 0) bad(c, "model.depth", "must be positive");
  o.vit.backbone.drop_path = drop_path_linspace(o.drop_path, o.vit.backbone.depth);

  o.data_root = resolve_path(c, "data.root", config_path);
  o.train_split = c.get<std::string>("data.train_split");
  o.val_split = c.get<std::string>("data.val_split");
  o.on_corrupt = c.get<std::string>("data.on_corrupt");
  if (o.on_corrupt != "error" && o.on_corrupt != "skip") bad(c, "data.on_corrupt", "expected error | skip");
  o.workers = c.get<int>("data.workers");
  if (o.workers < 1) bad(c, "data.workers", "must be >= 1");
  o.prefetch = c.get<int>("data.prefetch");
  o.crop_pct = c.get<double>("data.crop_pct");
  if (o.crop_pct <= 0 || o.crop_pct > 1) bad(c, "data.crop_pct", "must be in (0, 1]");
  o.rrc_scale = c.get<std::vector<double>>("data.rrc_scale");
  o.rrc_ratio = c.get<std::vector<double>>("data.rrc_ratio");
  if (o.rrc_scale.size() != 2 || !(0 < o.rrc_scale[0] && o.rrc_scale[0] <= o.rrc_scale[1] && o.rrc_scale[1] <= 1))
    bad(c, "data.rrc_scale", "expected [lo, hi] with 0 < lo <= hi <= 1");
  if (o.rrc_ratio.size() != 2 || !(0 < o.rrc_ratio[0] && o.rrc_ratio[0] <= o.rrc_ratio[1]))
    bad(c, "data.rrc_ratio", "expected [lo, hi] with 0 < lo <= hi");
  o.hflip = c.get<bool>("data.hflip");
  o.dct_scaling = c.get<bool>("data.dct_scaling");
  o.rand_augment = c.get<bool>("data.rand_augment");
  o.randaug_ops = c.get<int>("data.randaug_ops");
  o.randaug_magnitude = c.get<double>("data.randaug_magnitude");
  o.randaug_std = c.get<double>("data.randaug_mstd");
  o.erasing_prob = c.get<double>("data.random_erasing");
  if (o.erasing_prob < 0 || o.erasing_prob > 1) bad(c, "data.random_erasing", "must be a probability in [0, 1]");
  o.repeated_aug = c.get<int>("data.repeated_aug");
  o.mixup_alpha = c.get<double>("data.mixup");
  o.cutmix_alpha = c.get<double>("data.cutmix");
  o.mixup_prob = c.get<double>("data.mixup_prob");
  o.mixup_switch_prob = c.get<double>("data.mixup_switch_prob");
  if (o.mixup_alpha < 0) bad(c, "data.mixup", "must be >= 0");
  if (o.cutmix_alpha < 0) bad(c, "data.cutmix", "must be >= 0");

  o.epochs = c.get<int64_t>("train.epochs");
  if (o.epochs <= 0) bad(c, "train.epochs", "must be positive");
  o.batch_size = c.get<int64_t>("train.batch_size");
  if (o.batch_size <= 0) bad(c, "train.batch_size", "must be positive");
  if (o.mixing() && o.batch_size % 2 != 0)
    bad(c, "train.batch_size", "Mixup/CutMix pairs sample i with B-1-i and needs an even batch, got " +
                                   std::to_string(o.batch_size) + " (or set data.mixup_prob=0)");
  const double div = static_cast<double>(c.get<int64_t>("train.lr_batch_div"));
  if (div <= 0) bad(c, "train.lr_batch_div", "must be positive");
  o.lr = c.has("train.lr") ? c.get<double>("train.lr") : c.get<double>("train.base_lr") * o.batch_size / div;
  o.sched.base_lr = o.lr;
  o.sched.warmup_lr = c.get<double>("train.warmup_lr");
  o.sched.min_lr = c.get<double>("train.min_lr");
  o.sched.warmup_epochs = c.get<double>("train.warmup_epochs");
  o.sched.epochs = static_cast<double>(o.epochs);
  o.sched.deit_epoch_steps = c.get<bool>("train.deit_epoch_lr");
  o.weight_decay = c.get<double>("train.weight_decay");
  const auto betas = c.get<std::vector<double>>("train.betas");
  if (betas.size() != 2 || betas[0] < 0 || betas[0] >= 1 || betas[1] < 0 || betas[1] >= 1)
    bad(c, "train.betas", "expected [beta1, beta2] in [0, 1)");
  o.beta1 = betas[0], o.beta2 = betas[1];
  o.adam_eps = c.get<double>("train.eps");
  o.label_smoothing = c.get<double>("train.label_smoothing");
  if (o.label_smoothing < 0 || o.label_smoothing >= 1) bad(c, "train.label_smoothing", "must be in [0, 1)");
  if (c.has("train.clip_grad")) {
    o.clip_grad = c.get<double>("train.clip_grad");
    if (*o.clip_grad <= 0) bad(c, "train.clip_grad", "must be positive (or unset)");
  }
  o.ema = c.get<bool>("train.ema");
  o.ema_decay = c.get<double>("train.ema_decay");
  if (o.ema_decay < 0 || o.ema_decay > 1) bad(c, "train.ema_decay", "must be in [0, 1]");
  if (c.has("train.max_steps")) o.max_steps = c.get<int64_t>("train.max_steps");

  o.eval_every_epochs = c.get<int64_t>("eval.every_epochs");
  o.eval_batch_size = c.get<int64_t>("eval.batch_size");
  if (o.eval_batch_size <= 0) bad(c, "eval.batch_size", "must be positive");
  o.eval_ema = c.get<bool>("eval.ema");
  if (c.has("eval.max_images")) o.eval_max_images = c.get<int64_t>("eval.max_images");
  o.ckpt_every_epochs = c.get<int64_t>("ckpt.every_epochs");
  o.ckpt_every_steps = c.get<int64_t>("ckpt.every_steps");
  o.keep_last = c.get<int>("ckpt.keep_last");
  if (o.keep_last < 1) bad(c, "ckpt.keep_last", "must be >= 1");
  o.keep_best = c.get<bool>("ckpt.keep_best");
  o.resume = c.get<std::string>("resume");
  if (o.resume != "auto" && o.resume != "never") o.resume = resolve_path(c, "resume", config_path);
  o.log_every_steps = c.get<int64_t>("log.every_steps");
  o.log_every_s = c.get<double>("log.every_s");
  o.tensorboard = c.get<bool>("log.tensorboard");
  return o;
}

std::string find_config(const std::string& arg, const std::string& configs_dir) {
  std::vector<std::string> tried{arg};
  if (fs::is_regular_file(arg)) return arg;
  for (const std::string& cand : {configs_dir + "/" + arg, configs_dir + "/" + arg + ".yaml"}) {
    tried.push_back(cand);
    if (fs::is_regular_file(cand)) return cand;
  }
  std::string msg = "config '" + arg + "' not found (tried:";
  for (const auto& t : tried) msg += " " + t;
  throw ConfigError(msg + ")");
}

}  // namespace vt
