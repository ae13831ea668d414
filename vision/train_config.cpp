#include "vision/train_config.h"

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <tuple>
#include <vector>
#include <limits>

#include "core/config_checks.h"
#include "core/config_paths.h"
#include "train/activation_checkpointing.h"
#include "train/cluster_keys.h"
#include "train/cuda_graph_key.h"
#include "train/device_choice.h"

namespace vt {

const ConfigSchema& vtrain_schema() {
  static const ConfigSchema schema = [] {
    ConfigSchema s;
    using T = ConfigType;
    s.optional("name", T::String, "vtrain", "run name (letters, digits, - _ .): outputs go to <out_dir>/<name>/")
        .optional("out_dir", T::String, "runs", "parent of run directories (relative to the CWD)")
        .optional("device", T::String, "auto", "auto | cpu | cuda | cuda:N (auto: the GPU when one is visible)")
        .optional("precision", T::String, "auto", "auto | bf16 | fp32 | tf32 (auto: bf16 on a GPU, fp32 on the CPU)")
        .optional("seed", T::Int, "0", "seed of every random stream (init, data order, augmentation, drop-path)")
        .optional("threads", T::Int, "0", "OpenMP threads for compute (0: library default; 0..1024)")
        .optional("model.preset", T::String, "deit_small", "deit_tiny | deit_small | deit_base | custom (keys given below override the preset)")
        .optional("model.img_size", T::Int, "224", "input resolution")
        .optional("model.patch_size", T::Int, "16", "patch size (default: the preset's)")
        .optional("model.dim", T::Int, "384", "embedding width (default: the preset's)")
        .optional("model.depth", T::Int, "12", "blocks (default: the preset's)")
        .optional("model.heads", T::Int, "6", "attention heads (default: the preset's)")
        .optional("model.mlp_ratio", T::Float, "4.0", "MLP hidden / dim (default: the preset's)")
        .optional("model.qkv_bias", T::Bool, "true", "bias on the qkv projection")
        .optional("model.num_classes", T::Int, "0", "classes (0: number of class folders)")
        .optional("model.drop_path", T::Float, "0.1", "stochastic depth, linear over blocks from 0")
        .optional("model.norm.scheme", T::String, "siamese", "pre | post | siamese | mixln | deepnorm | residual | hybrid | spannorm")
        .optional("model.norm.normalized_input", T::Bool, "true", "siamese: keep input_norm_k")
        .optional("model.norm.mixln_alpha", T::Float, "0.25", "mixln: fraction of leading Post-Norm blocks, in [0, 1]")
        .optional("model.norm.spannorm_alpha", T::Float, "~", "spannorm: scale of the spanning branch, > 0 (unset: 1/sqrt(depth))")
        .optional("model.norm.depth_scaling", T::Bool, "true", "siamese: c_l = sqrt(2(l+1)) (else 1)")
        .required("data.root", T::String, "folder with <train_split>/ and <val_split>/ class folders")
        .optional("data.format", T::String, "folder", "folder (ImageFolder class folders) | shards (the splits packed by `vtrain pack`)")
        .optional("data.train_split", T::String, "train", "training sub-folder")
        .optional("data.val_split", T::String, "val", "validation sub-folder")
        .optional("data.workers", T::Int, "8", "loader threads (1..256)")
        .optional("data.prefetch", T::Int, "4", "ready batches buffered (1..1024)")
        .optional("data.max_train_images", T::Int, "~", "train on N >= 1 evenly spaced images of data.train_split (unset: all)")
        .optional("data.on_corrupt", T::String, "error", "error | skip")
        .optional("data.crop_pct", T::Float, "0.875", "eval: resize to int(img_size / crop_pct), center crop")
        .optional("data.rrc_scale", T::FloatList, "[0.08, 1.0]", "RandomResizedCrop area range")
        .optional("data.rrc_ratio", T::FloatList, "[0.75, 1.3333333333333333]", "RandomResizedCrop aspect range")
        .optional("data.hflip", T::Bool, "true", "random horizontal flip")
        .optional("data.dct_scaling", T::Bool, "true", "JPEG DCT-domain downscaling")
        .optional("data.decode", T::String, "full", "full | crop: train JPEGs decoded whole, or only RandomResizedCrop's box (same pixels, less work)")
        .optional("data.decode_on", T::String, "host", "host | device: JPEGs decoded by the loader's workers, or by nvJPEG on the GPU (CUDA runs; whole images, then RandomResizedCrop and the augmentation there; non-JPEG files and what nvJPEG refuses are decoded on the host)")
        .optional("data.augment_on", T::String, "auto", "auto | host | device: augment in the loader's workers, or after the loader on the model's device (uint8 crops + per-sample plans, kernels/augment.h; CPU runs: its CPU twins); auto: device on CUDA (but host for several GPU processes with Mixup/CutMix), host on CPU")
        .optional("data.rand_augment", T::Bool, "true", "RandAugment rand-m9-mstd0.5-inc1")
        .optional("data.randaug_ops", T::Int, "2", "RandAugment ops per image")
        .optional("data.randaug_magnitude", T::Float, "9", "RandAugment magnitude m")
        .optional("data.randaug_mstd", T::Float, "0.5", "RandAugment magnitude std")
        .optional("data.random_erasing", T::Float, "0.25", "RandomErasing probability (0: off)")
        .optional("data.repeated_aug", T::Int, "3", "RASampler repeats (1: plain shuffle; 1..64; > 1 needs >= 256 train images)")
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
        .optional("train.max_steps", T::Int, "~", "stop after this many optimizer steps, >= 1 (unset: no limit; the schedule is unchanged)")
        .optional("train.max_nonfinite", T::Int, "0", "non-finite loss/grad norm: 0 stops at once; N skips up to N in a row, then stops")
        .optional("train.allreduce_bucket_mb", T::Float, "25", "data-parallel gradient all-reduce buckets, MiB, as torch DDP bucket_cap_mb (GPU: each issued during the backward pass; 0: one all-reduce after it)")
        .optional("eval.every_epochs", T::Int, "1", "evaluate every N epochs (0: only at the end)")
        .optional("eval.batch_size", T::Int, "256", "evaluation batch size")
        .optional("eval.ema", T::Bool, "true", "also evaluate the EMA weights")
        .optional("eval.max_images", T::Int, "~", "evaluate N >= 1 evenly spaced val images (unset: all)")
        .optional("ckpt.every_epochs", T::Int, "1", "checkpoint every N epochs (0: off; the end always)")
        .optional("ckpt.every_steps", T::Int, "0", "also checkpoint every N steps (0: off)")
        .optional("ckpt.keep_last", T::Int, "3", "complete checkpoints kept (plus the best; 0: all)")
        .optional("ckpt.keep_best", T::Bool, "true", "keep the checkpoint with the best top-1")
        .optional("resume", T::String, "auto", "auto (newest complete checkpoint of the run) | never (alias: none) | DIR")
        .optional("log.every_steps", T::Int, "50", "metrics.jsonl line every N steps (0: off)")
        .optional("log.every_s", T::Float, "30", "plain progress line every N seconds (non-terminal)")
        .optional("log.tensorboard", T::Bool, "true", "TensorBoard event files in <run>/tb/")
        .optional("log.stream_rms", T::Bool, "false", "per-block RMS of the x/y streams (stream_rms/x/<l>, stream_rms/y/<l>) on each metrics line")
        .optional("log.norm_scales", T::Bool, "false", "mean |weight| of each affine LayerNorm (norm_scale/<name>) at each evaluation");
    declare_activation_checkpointing(s);
    declare_cuda_graph(s);
    declare_cluster_keys(s);
    return s;
  }();
  return schema;
}

namespace {

constexpr int64_t kIntMax = std::numeric_limits<int32_t>::max();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TrainOptions train_options(const Config& c, const std::string& config_path) {
  TrainOptions o;
  o.name = run_name(c);
  o.out_dir = c.get<std::string>("out_dir");
  if (o.out_dir.empty()) bad_value(c, "out_dir", "must not be empty");
  o.compute = device_choice(c);
  o.seed = static_cast<uint64_t>(int_in(c, "seed", 0, std::numeric_limits<int64_t>::max()));
  o.threads = static_cast<int>(int_in(c, "threads", 0, 1024));

  NormScheme scheme;
  try {
    scheme = norm_scheme_from_name(c.get<std::string>("model.norm.scheme"));
  } catch (const std::invalid_argument& e) {
    bad_value(c, "model.norm.scheme", "expected pre | post | siamese | mixln | deepnorm | residual | hybrid | spannorm, got '" + c.get<std::string>("model.norm.scheme") + "'");
  }
  o.preset = c.get<std::string>("model.preset");
  o.drop_path = static_cast<float>(real_in(c, "model.drop_path", 0, 1));
  if (o.drop_path >= 1) bad_value(c, "model.drop_path", "must be in [0, 1)");
  // A preset gives the defaults of the architecture keys; a key given in the
  // config overrides it (timm: vit_small_patch16_224(depth=1) is a 1-block
  // ViT). "custom" takes every key, defaults included.
  const bool custom = o.preset == "custom";
  if (!custom) {
    try {
      o.vit = vit_preset(o.preset);
    } catch (const std::invalid_argument&) {
      bad_value(c, "model.preset", "expected deit_tiny | deit_small | deit_base | custom, got '" + o.preset + "'");
    }
  }
  auto from_config = [&](const char* key) { return custom || given(c, key); };
  if (from_config("model.patch_size")) o.vit.patch_size = int_in(c, "model.patch_size", 1, 4096);
  if (from_config("model.dim")) o.vit.backbone.dim = int_in(c, "model.dim", 1, 65536);
  if (from_config("model.depth")) o.vit.backbone.depth = int_in(c, "model.depth", 1, 4096);
  if (from_config("model.heads")) o.vit.backbone.heads = int_in(c, "model.heads", 1, 65536);
  if (from_config("model.mlp_ratio"))
    o.vit.backbone.mlp_ratio = real_in(c, "model.mlp_ratio", 0, 1024, /*open_lo=*/true);
  auto origin = [&](const char* key) {
    return from_config(key) ? std::string() : " (from model.preset " + o.preset + ")";
  };
  if (!custom) {
    const VitConfig p = vit_preset(o.preset);
    char ratio[2][32];
    std::snprintf(ratio[0], sizeof ratio[0], "%g", o.vit.backbone.mlp_ratio);
    std::snprintf(ratio[1], sizeof ratio[1], "%g", p.backbone.mlp_ratio);
    const std::vector<std::tuple<const char*, std::string, std::string>> keys{
        {"model.patch_size", std::to_string(o.vit.patch_size), std::to_string(p.patch_size)},
        {"model.dim", std::to_string(o.vit.backbone.dim), std::to_string(p.backbone.dim)},
        {"model.depth", std::to_string(o.vit.backbone.depth), std::to_string(p.backbone.depth)},
        {"model.heads", std::to_string(o.vit.backbone.heads), std::to_string(p.backbone.heads)},
        {"model.mlp_ratio", ratio[0], ratio[1]}};
    const std::string preset_source = c.source("model.preset");
    std::string list;
    for (const auto& [key, value, preset_value] : keys) {
      if (!given(c, key)) continue;
      const std::string src = c.source(key);
      o.preset_overridden_elsewhere |= src.substr(0, src.find(':')) != preset_source.substr(0, preset_source.find(':'));
      list += std::string(list.empty() ? "" : ", ") + key + " = " + value + " (" + src + "; the preset's " +
              preset_value + ")";
    }
    if (!list.empty())
      o.preset_overrides = "model.preset " + o.preset + " (" + preset_source + "): overridden by " + list;
  }
  if (o.vit.backbone.dim % o.vit.backbone.heads != 0)
    bad_value(c, "model.heads", "model.heads = " + std::to_string(o.vit.backbone.heads) + origin("model.heads") +
                                    " must divide model.dim = " + std::to_string(o.vit.backbone.dim) +
                                    origin("model.dim"));
  o.vit.img_size = int_in(c, "model.img_size", 1, 8192);
  if (o.vit.img_size % o.vit.patch_size != 0)
    bad_value(c, "model.img_size", "model.img_size = " + std::to_string(o.vit.img_size) +
                                       " is not a multiple of model.patch_size = " + std::to_string(o.vit.patch_size) +
                                       origin("model.patch_size"));
  o.vit.num_classes = int_in(c, "model.num_classes", 0, kIntMax);
  o.vit.backbone.variant = ModelVariant::DeiT;
  o.vit.backbone.scheme = scheme;
  o.vit.backbone.qkv_bias = c.get<bool>("model.qkv_bias");
  o.vit.backbone.normalized_input = c.get<bool>("model.norm.normalized_input");
  o.vit.backbone.depth_scaling = c.get<bool>("model.norm.depth_scaling");
  o.vit.backbone.mixln_alpha = real_in(c, "model.norm.mixln_alpha", 0, 1);
  reject_unread(c, "model.norm.mixln_alpha", scheme == NormScheme::MixLN, "model.norm.scheme: mixln",
                BackboneConfig{}.mixln_alpha);
  reject_unread(c, "model.norm.spannorm_alpha", scheme == NormScheme::SpanNorm, "model.norm.scheme: spannorm",
                std::numeric_limits<double>::quiet_NaN());
  if (c.has("model.norm.spannorm_alpha"))
    o.vit.backbone.spannorm_alpha = real_in(c, "model.norm.spannorm_alpha", 0, kInf, /*open_lo=*/true);
  o.vit.backbone.drop_path = drop_path_linspace(o.drop_path, o.vit.backbone.depth);
  // Whatever the model would still reject is a config error too (exit 2),
  // not a runtime failure after the data has been opened.
  try {
    VitConfig probe = o.vit;
    if (probe.num_classes == 0) probe.num_classes = 1;  // taken from the data later
    probe.validate();
  } catch (const std::invalid_argument& e) {
    throw ConfigError(std::string("model: ") + e.what());
  }

  o.data_root = resolve_data_root(c, "data.root", config_path);
  if (c.get<std::string>("data.root").empty()) bad_value(c, "data.root", "must not be empty");
  o.data_format = c.get<std::string>("data.format");
  if (o.data_format != "folder" && o.data_format != "shards") bad_value(c, "data.format", "expected folder | shards");
  o.train_split = c.get<std::string>("data.train_split");
  o.val_split = c.get<std::string>("data.val_split");
  o.on_corrupt = c.get<std::string>("data.on_corrupt");
  if (o.on_corrupt != "error" && o.on_corrupt != "skip") bad_value(c, "data.on_corrupt", "expected error | skip");
  // One OS thread each; thousands only exhaust memory and thread limits.
  o.workers = static_cast<int>(int_in(c, "data.workers", 1, 256));
  o.prefetch = static_cast<int>(int_in(c, "data.prefetch", 1, 1024));
  o.crop_pct = c.get<double>("data.crop_pct");
  if (!(o.crop_pct > 0 && o.crop_pct <= 1)) bad_value(c, "data.crop_pct", "must be in (0, 1]");
  o.rrc_scale = c.get<std::vector<double>>("data.rrc_scale");
  o.rrc_ratio = c.get<std::vector<double>>("data.rrc_ratio");
  if (o.rrc_scale.size() != 2 || !(0 < o.rrc_scale[0] && o.rrc_scale[0] <= o.rrc_scale[1] && o.rrc_scale[1] <= 1))
    bad_value(c, "data.rrc_scale", "expected [lo, hi] with 0 < lo <= hi <= 1");
  if (o.rrc_ratio.size() != 2 ||
      !(0 < o.rrc_ratio[0] && o.rrc_ratio[0] <= o.rrc_ratio[1] && std::isfinite(o.rrc_ratio[1])))
    bad_value(c, "data.rrc_ratio", "expected [lo, hi] with 0 < lo <= hi (finite)");
  o.hflip = c.get<bool>("data.hflip");
  o.dct_scaling = c.get<bool>("data.dct_scaling");
  try {
    o.decode = parse_decode_mode(c.get<std::string>("data.decode"));
  } catch (const std::invalid_argument& e) {
    bad_value(c, "data.decode", e.what());
  }
  {
    const std::string on = c.get<std::string>("data.augment_on");
    if (on != "auto" && on != "host" && on != "device")
      bad_value(c, "data.augment_on", "expected 'auto', 'host' or 'device', got '" + on + "'");
    o.augment_on_auto = on == "auto";
    o.augment_on_device = on == "device" || (on == "auto" && o.compute.device.is_cuda());
  }
  {
    const std::string on = c.get<std::string>("data.decode_on");
    if (on != "host" && on != "device") bad_value(c, "data.decode_on", "expected 'host' or 'device', got '" + on + "'");
    o.decode_on_device = on == "device";
    if (o.decode_on_device && !o.compute.device.is_cuda())
      bad_value(c, "data.decode_on", "'device' decodes with nvJPEG on a GPU: it needs device=cuda (this run is on " +
                                         o.compute.device.str() + ")");
    if (o.decode_on_device && !o.augment_on_device)
      bad_value(c, "data.decode_on", "'device' hands the decoded crops to the device augmentation: it needs "
                                     "data.augment_on=device (or auto)");
    if (o.decode_on_device && o.decode == DecodeMode::Crop)
      bad_value(c, "data.decode_on", "'device' decodes whole images (nvJPEG's batched decode has no region "
                                     "decoding): it needs data.decode=full, not crop");
  }
  o.rand_augment = c.get<bool>("data.rand_augment");
  o.randaug_ops = static_cast<int>(int_in(c, "data.randaug_ops", 0, 64));
  o.randaug_magnitude = real_in(c, "data.randaug_magnitude", 0, 1000);
  o.randaug_std = real_in(c, "data.randaug_mstd", 0, 1000);
  o.erasing_prob = real_in(c, "data.random_erasing", 0, 1);
  o.repeated_aug = static_cast<int>(int_in(c, "data.repeated_aug", 1, 64));
  o.mixup_alpha = real_in(c, "data.mixup", 0, kInf);
  o.cutmix_alpha = real_in(c, "data.cutmix", 0, kInf);
  o.mixup_prob = real_in(c, "data.mixup_prob", 0, 1);
  o.mixup_switch_prob = real_in(c, "data.mixup_switch_prob", 0, 1);

  o.epochs = int_in(c, "train.epochs", 1, kIntMax);
  // The loader and kernels index a batch with int.
  o.batch_size = int_in(c, "train.batch_size", 1, kIntMax);
  if (o.mixing() && o.batch_size % 2 != 0)
    bad_value(c, "train.batch_size", "Mixup/CutMix pairs sample i with B-1-i and needs an even batch, got " +
                                   std::to_string(o.batch_size) + " (or set data.mixup_prob=0)");
  const double div = static_cast<double>(int_in(c, "train.lr_batch_div", 1, kIntMax));
  if (c.has("train.lr")) {
    o.lr = real_in(c, "train.lr", 0, kInf, /*open_lo=*/true);
  } else {
    o.lr = real_in(c, "train.base_lr", 0, kInf, /*open_lo=*/true) * static_cast<double>(o.batch_size) / div;
    if (!std::isfinite(o.lr)) bad_value(c, "train.base_lr", "train.base_lr * train.batch_size / train.lr_batch_div is not finite");
  }
  o.sched.base_lr = o.lr;
  o.sched.warmup_lr = real_in(c, "train.warmup_lr", 0, kInf);
  o.sched.min_lr = real_in(c, "train.min_lr", 0, kInf);
  o.sched.warmup_epochs = real_in(c, "train.warmup_epochs", 0, kInf);
  o.sched.epochs = static_cast<double>(o.epochs);
  o.sched.deit_epoch_steps = c.get<bool>("train.deit_epoch_lr");
  o.weight_decay = real_in(c, "train.weight_decay", 0, kInf);
  const auto betas = c.get<std::vector<double>>("train.betas");
  if (betas.size() != 2 || !(betas[0] >= 0 && betas[0] < 1 && betas[1] >= 0 && betas[1] < 1))
    bad_value(c, "train.betas", "expected [beta1, beta2] in [0, 1)");
  o.beta1 = betas[0], o.beta2 = betas[1];
  o.adam_eps = real_in(c, "train.eps", 0, kInf, /*open_lo=*/true);
  o.label_smoothing = real_in(c, "train.label_smoothing", 0, 1);
  if (o.label_smoothing >= 1) bad_value(c, "train.label_smoothing", "must be in [0, 1)");
  if (c.has("train.clip_grad")) o.clip_grad = real_in(c, "train.clip_grad", 0, kInf, /*open_lo=*/true);
  o.ema = c.get<bool>("train.ema");
  o.ema_decay = real_in(c, "train.ema_decay", 0, 1);
  // Unset means no limit; 0 would train nothing and still report a result.
  if (c.has("train.max_steps")) o.max_steps = int_in(c, "train.max_steps", 1, std::numeric_limits<int64_t>::max());
  o.max_nonfinite = static_cast<int>(int_in(c, "train.max_nonfinite", 0, kIntMax));
  o.allreduce_bucket_mb = real_in(c, "train.allreduce_bucket_mb", 0, 1e9);
  o.cuda_graph = cuda_graph_enabled(c);
  o.cluster = cluster_options(c);
  o.activation_checkpointing = activation_checkpointing(c);

  o.eval_every_epochs = int_in(c, "eval.every_epochs", 0, kIntMax);
  o.eval_batch_size = int_in(c, "eval.batch_size", 1, kIntMax);
  o.eval_ema = c.get<bool>("eval.ema");
  // Unset means all images; 0 would evaluate nothing and report 0% as a result.
  if (c.has("data.max_train_images"))
    o.max_train_images = int_in(c, "data.max_train_images", 1, std::numeric_limits<int64_t>::max());
  if (c.has("eval.max_images"))
    o.eval_max_images = int_in(c, "eval.max_images", 1, std::numeric_limits<int64_t>::max());
  o.ckpt_every_epochs = int_in(c, "ckpt.every_epochs", 0, kIntMax);
  o.ckpt_every_steps = int_in(c, "ckpt.every_steps", 0, std::numeric_limits<int64_t>::max());
  o.keep_last = static_cast<int>(int_in(c, "ckpt.keep_last", 0, kIntMax));
  o.keep_best = c.get<bool>("ckpt.keep_best");
  o.resume = c.get<std::string>("resume");
  if (o.resume == "none") o.resume = "never";  // dittrain's spelling
  if (o.resume.empty()) bad_value(c, "resume", "expected auto | never | none | a checkpoint directory");
  if (o.resume != "auto" && o.resume != "never") o.resume = resolve_path(c, "resume", config_path);
  o.log_every_steps = int_in(c, "log.every_steps", 0, std::numeric_limits<int64_t>::max());
  o.log_every_s = real_in(c, "log.every_s", 0, kInf);
  o.tensorboard = c.get<bool>("log.tensorboard");
  o.log_stream_rms = c.get<bool>("log.stream_rms");
  o.log_norm_scales = c.get<bool>("log.norm_scales");
  return o;
}

void record_architecture(Config& c, const TrainOptions& o) {
  if (o.preset == "custom") return;  // every key is what trained
  const std::string src = "model.preset " + o.preset;
  auto record = [&](const char* key, const std::string& value) {
    if (!given(c, key)) c.set(key, value, src);
  };
  record("model.patch_size", std::to_string(o.vit.patch_size));
  record("model.dim", std::to_string(o.vit.backbone.dim));
  record("model.depth", std::to_string(o.vit.backbone.depth));
  record("model.heads", std::to_string(o.vit.backbone.heads));
  char ratio[32];
  std::snprintf(ratio, sizeof ratio, "%.17g", o.vit.backbone.mlp_ratio);
  record("model.mlp_ratio", ratio);
}

}  // namespace vt
