// vtrain config validation (train_options): every bad value fails as a
// ConfigError naming its key, before any data or run directory is touched,
// and the documented conventions hold (resume=none is never, unset
// max_steps / max_images mean no limit).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/config_paths.h"
#include "test_fs.h"
#include "core/tensor.h"
#include "vision/train_config.h"
#include "vision/vit.h"

namespace vt {
namespace {

using vt_test::error_of;

// A valid config; data.root need not exist (train_options reads no files).
const char* kYaml =
    "name: t\nout_dir: /tmp/unused\n"
    "model: {preset: custom, img_size: 32, patch_size: 8, dim: 16, depth: 2, heads: 2}\n"
    "data: {root: /nonexistent, repeated_aug: 1}\n"
    "train: {epochs: 1, batch_size: 8}\n";

TrainOptions options(const std::vector<std::string>& ov) {
  return train_options(Config::parse(kYaml, vtrain_schema(), ov, "test.yaml", "."), "test.yaml");
}

// The ConfigError message of `ov`, failing the test if there is none.
std::string config_error(const std::vector<std::string>& ov) {
  try {
    options(ov);
  } catch (const ConfigError& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not a ConfigError: " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "accepted: " << ov.at(0);
  return "";
}

TEST(TrainConfigChecks, ValidBaseline) { EXPECT_NO_THROW(options({})); }

// model.preset=deit_tiny model.depth=2 on the command line over a file that
// sets model.dim: the file's dim trains (a key given overrides the preset),
// and the options say so, key by key with where each came from and the
// preset's value (DeiT-Ti: dim 192, depth 12), as a warning: the keys come
// from another place than the preset. It trained the file's dim silently.
TEST(TrainConfigChecks, KeysOverAPresetAreNamedWithTheirSource) {
  const char* yaml =
      "name: t\nout_dir: /tmp/unused\n"
      "model:\n"
      "  preset: custom\n"
      "  img_size: 32\n"
      "  dim: 96\n"
      "data: {root: /nonexistent, repeated_aug: 1}\n";
  const TrainOptions o = train_options(
      Config::parse(yaml, vtrain_schema(), {"model.preset=deit_tiny", "model.depth=2"}, "test.yaml", "."), "test.yaml");
  EXPECT_EQ(o.vit.backbone.dim, 96);
  EXPECT_EQ(o.vit.backbone.depth, 2);
  EXPECT_EQ(o.vit.backbone.heads, 3);  // deit_tiny's
  EXPECT_EQ(o.preset_overrides,
            "model.preset deit_tiny (command line): overridden by model.dim = 96 (test.yaml:6; the preset's 192), "
            "model.depth = 2 (command line; the preset's 12)");
  EXPECT_TRUE(o.preset_overridden_elsewhere);
  // The preset and its override in one place: said, not warned.
  const TrainOptions same = train_options(
      Config::parse(yaml, vtrain_schema(), {"model.preset=deit_tiny", "model.dim=192", "model.depth=2"}, "test.yaml", "."),
      "test.yaml");
  EXPECT_FALSE(same.preset_overridden_elsewhere);
  EXPECT_NE(same.preset_overrides.find("model.depth = 2 (command line; the preset's 12)"), std::string::npos);
  // Custom, or a preset alone: nothing to say.
  EXPECT_EQ(options({}).preset_overrides, "");
  const char* preset_only = "name: t\nout_dir: /tmp/unused\nmodel: {img_size: 32}\ndata: {root: /nonexistent}\n";
  EXPECT_EQ(train_options(Config::parse(preset_only, vtrain_schema(), {"model.preset=deit_tiny"}, "test.yaml", "."),
                          "test.yaml")
                .preset_overrides,
            "");
}

TEST(TrainConfigChecks, OutOfRangeValuesNameTheirKey) {
  // {override, key the message must start with}
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"eval.batch_size=3000000000", "eval.batch_size"},  // does not fit the loader's int
      {"eval.batch_size=0", "eval.batch_size"},
      {"train.batch_size=2147483648", "train.batch_size"},
      {"eval.max_images=0", "eval.max_images"},
      {"eval.max_images=-5", "eval.max_images"},
      {"data.max_train_images=0", "data.max_train_images"},
      {"eval.every_epochs=-1", "eval.every_epochs"},
      {"data.workers=100000", "data.workers"},
      {"data.workers=0", "data.workers"},
      {"data.prefetch=0", "data.prefetch"},
      {"data.repeated_aug=0", "data.repeated_aug"},
      {"data.mixup_prob=1.5", "data.mixup_prob"},
      {"data.mixup_prob=-0.1", "data.mixup_prob"},
      {"data.mixup_switch_prob=2", "data.mixup_switch_prob"},
      {"data.random_erasing=1.01", "data.random_erasing"},
      {"data.mixup=-1", "data.mixup"},
      {"data.cutmix=.inf", "data.cutmix"},
      {"threads=-1", "threads"},
      {"seed=-1", "seed"},
      {"train.lr=0", "train.lr"},
      {"train.lr=-1e-3", "train.lr"},
      {"train.lr=.nan", "train.lr"},
      {"train.lr=.inf", "train.lr"},
      {"train.base_lr=0", "train.base_lr"},
      {"train.weight_decay=-0.01", "train.weight_decay"},
      {"train.warmup_epochs=-1", "train.warmup_epochs"},
      {"train.min_lr=-1", "train.min_lr"},
      {"train.max_steps=0", "train.max_steps"},
      {"train.epochs=0", "train.epochs"},
      {"train.eps=0", "train.eps"},
      {"train.allreduce_bucket_mb=-1", "train.allreduce_bucket_mb"},
      {"train.cuda_graph=always", "train.cuda_graph"},
      {"train.allreduce_bucket_mb=.nan", "train.allreduce_bucket_mb"},
      {"train.activation_checkpointing=block", "train.activation_checkpointing"},
      {"train.activation_checkpointing=true", "train.activation_checkpointing"},
      {"ckpt.every_steps=-1", "ckpt.every_steps"},
      {"log.every_steps=-1", "log.every_steps"},
      {"model.img_size=0", "model.img_size"},
      {"model.img_size=-32", "model.img_size"},
      {"model.img_size=36", "model.img_size"},  // not a multiple of patch 8
      {"model.heads=3", "model.heads"},         // does not divide dim 16
      {"model.patch_size=0", "model.patch_size"},
      {"model.dim=0", "model.dim"},
      {"model.mlp_ratio=0", "model.mlp_ratio"},
      {"model.num_classes=-2", "model.num_classes"},
      {"device=tpu", "device"},
      {"device=cuda:x", "device"},
      {"device=cuda:99", "device"},  // never that many GPUs (or none at all)
      {"precision=fp16", "precision"},
      {"model.norm.mixln_alpha=1.5", "model.norm.mixln_alpha"},
      {"model.norm.mixln_alpha=-0.25", "model.norm.mixln_alpha"},
      {"model.norm.mixln_alpha=.nan", "model.norm.mixln_alpha"},
      {"model.norm.scheme=span_norm", "model.norm.scheme"},
      {"model.norm.mixln_alpha=0.5", "model.norm.mixln_alpha"},        // the default scheme is siamese
      {"model.norm.spannorm_alpha=0.5", "model.norm.spannorm_alpha"},  // likewise
  };
  for (const auto& [ov, key] : cases) {
    const std::string m = config_error({ov});
    EXPECT_EQ(m.rfind(key + " (command line)", 0), 0u) << ov << " -> " << m;
  }
}

TEST(TrainConfigChecks, DecodeMode) {
  const std::string m = config_error({"data.decode=bogus"});
  EXPECT_EQ(m.rfind("data.decode (command line)", 0), 0u) << m;
  EXPECT_NE(m.find("'bogus'"), std::string::npos) << m;
  EXPECT_NE(m.find("full | crop"), std::string::npos) << m;
  EXPECT_EQ(options({}).decode, DecodeMode::Full);
  EXPECT_EQ(options({"data.decode=crop"}).decode, DecodeMode::Crop);
}

TEST(TrainConfigChecks, AugmentOn) {
  const std::string m = config_error({"data.augment_on=gpu"});
  EXPECT_EQ(m.rfind("data.augment_on (command line)", 0), 0u) << m;
  EXPECT_NE(m.find("'auto', 'host' or 'device'"), std::string::npos) << m;
  EXPECT_NE(m.find("'gpu'"), std::string::npos) << m;
  EXPECT_FALSE(options({"device=cpu"}).augment_on_device);  // the default, auto: host on the CPU
  EXPECT_TRUE(options({"device=cpu"}).augment_on_auto);
  EXPECT_FALSE(options({"device=cpu", "data.augment_on=host"}).augment_on_device);
  EXPECT_TRUE(options({"device=cpu", "data.augment_on=device"}).augment_on_device);
  EXPECT_FALSE(options({"device=cpu", "data.augment_on=device"}).augment_on_auto);
}

TEST(TrainConfigChecks, DecodeOn) {
  std::string m = config_error({"data.decode_on=gpu"});
  EXPECT_EQ(m.rfind("data.decode_on (command line)", 0), 0u) << m;
  EXPECT_NE(m.find("'host' or 'device'"), std::string::npos) << m;
  EXPECT_FALSE(options({}).decode_on_device);  // the default: host
  m = config_error({"device=cpu", "data.decode_on=device"});
  EXPECT_EQ(m.rfind("data.decode_on (command line)", 0), 0u) << m;
  EXPECT_NE(m.find("device=cuda"), std::string::npos) << m;
}

TEST(TrainConfigChecks, RunNameIsOnePathComponent) {
  for (const char* bad : {"name=..", "name=.", "name=a/b", "name=/abs", "name=sp ace", "name=a\\b"}) {
    const std::string m = config_error({bad});
    EXPECT_NE(m.find("plain name"), std::string::npos) << bad << " -> " << m;
  }
  for (const char* ok : {"name=run-1_b.2", "name=..x", "name=A"}) EXPECT_NO_THROW(options({ok})) << ok;
}

TEST(TrainConfigChecks, ModelShapeOfAPresetIsAModelError) {
  // deit_tiny has patch 16: 40 is not a multiple.
  const std::string m = error_of([] {
    train_options(Config::parse("model: {preset: deit_tiny, img_size: 40}\ndata: {root: /nonexistent}\n",
                                vtrain_schema(), {}, "test.yaml", "."),
                  "test.yaml");
  });
  EXPECT_EQ(m.rfind("model.img_size", 0), 0u) << m;
  EXPECT_NE(m.find("model.patch_size = 16 (from model.preset deit_tiny)"), std::string::npos) << m;
}

TEST(TrainConfigChecks, BoundaryValuesAreAccepted) {
  const TrainOptions o = options({"data.workers=256", "data.prefetch=1", "data.mixup_prob=1", "data.mixup_prob=0",
                                  "train.weight_decay=0", "train.warmup_epochs=0", "threads=0", "train.max_steps=1",
                                  "eval.max_images=1", "data.max_train_images=1", "eval.batch_size=2147483647", "data.repeated_aug=1"});
  EXPECT_EQ(o.workers, 256);
  EXPECT_EQ(o.eval_batch_size, 2147483647);
  ASSERT_TRUE(o.max_steps.has_value());
  EXPECT_EQ(*o.max_steps, 1);
  ASSERT_TRUE(o.eval_max_images.has_value());
  EXPECT_EQ(*o.eval_max_images, 1);
  ASSERT_TRUE(o.max_train_images.has_value());
  EXPECT_EQ(*o.max_train_images, 1);
  // Unset: no limits.
  const TrainOptions d = options({});
  EXPECT_FALSE(d.max_steps.has_value());
  EXPECT_FALSE(d.eval_max_images.has_value());
  EXPECT_FALSE(d.max_train_images.has_value());
}

// model.norm.mixln_alpha reaches the model: after a forward, Mix-LN's Post
// blocks report an x stream and its Pre blocks a y stream
// (Backbone::stream_rms), so counting them counts the Post blocks.
TEST(TrainConfigChecks, MixLnAlphaSetsThePostBlocksOfTheModel) {
  for (const auto& [alpha, post] : std::vector<std::pair<std::string, int>>{{"0", 0}, {"0.5", 2}, {"0.74", 2}, {"1", 4}}) {
    TrainOptions o = options({"model.norm.scheme=mixln", "model.depth=4", "model.norm.mixln_alpha=" + alpha});
    o.vit.num_classes = 3;
    VisionTransformer vit(o.vit);
    vit.init(1);
    Tensor images = Tensor::empty({2, 3, 32, 32}, DType::F32);
    float* p = images.data<float>();
    for (int64_t i = 0; i < images.numel(); ++i) p[i] = static_cast<float>((i * 37) % 101) / 50.0f - 1.0f;
    Tensor logits = Tensor::empty({2, 3}, DType::F32);
    vit.forward(images, logits);
    const Backbone::StreamRms rms = vit.backbone().stream_rms();
    ASSERT_EQ(rms.x.size(), 4u);
    int x_blocks = 0;
    for (size_t l = 0; l < 4; ++l) {
      const bool has_x = !std::isnan(rms.x[l]), has_y = !std::isnan(rms.y[l]);
      EXPECT_NE(has_x, has_y) << "alpha " << alpha << " block " << l;
      EXPECT_EQ(has_x, static_cast<int>(l) < post) << "alpha " << alpha << " block " << l;  // Post blocks lead
      x_blocks += has_x;
    }
    EXPECT_EQ(x_blocks, post) << "alpha " << alpha;
  }
  EXPECT_DOUBLE_EQ(options({}).vit.backbone.mixln_alpha, 0.25);  // Mix-LN's default
}

// A scheme's own key set for another scheme is an error naming the key and
// the scheme that reads it; its default value (spelled out by a run's saved
// config.yaml) passes, so a saved config loads again.
TEST(TrainConfigChecks, SchemeKeysAreErrorsForOtherSchemes) {
  for (const auto& [ov, reader] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"model.norm.scheme=pre", "model.norm.mixln_alpha=0.5"}, "mixln"},
           {{"model.norm.scheme=mixln", "model.norm.spannorm_alpha=0.5"}, "spannorm"},
           {{"model.norm.scheme=spannorm", "model.norm.mixln_alpha=0"}, "mixln"}}) {
    const std::string m = config_error(ov);
    EXPECT_EQ(m.rfind(ov[1].substr(0, ov[1].find('=')) + " (command line)", 0), 0u) << m;
    EXPECT_NE(m.find("model.norm.scheme: " + reader), std::string::npos) << m;
  }
  for (const char* bad : {"model.norm.spannorm_alpha=0", "model.norm.spannorm_alpha=-1", "model.norm.spannorm_alpha=.inf"}) {
    const std::string m = config_error({"model.norm.scheme=spannorm", bad});
    EXPECT_EQ(m.rfind("model.norm.spannorm_alpha (command line)", 0), 0u) << bad << " -> " << m;
  }
  EXPECT_NO_THROW(options({"model.norm.scheme=pre", "model.norm.mixln_alpha=0.25"}));
  const Config saved = Config::parse(kYaml, vtrain_schema(), {"model.norm.scheme=post"}, "test.yaml", ".");
  EXPECT_NO_THROW(train_options(Config::parse(saved.to_yaml(), vtrain_schema(), {}, "config.yaml", "."), "config.yaml"));
}

// model.norm.spannorm_alpha reaches the model's backbone; unset it is
// 1/sqrt(depth) there.
TEST(TrainConfigChecks, SpanNormAlphaReachesTheModel) {
  TrainOptions o = options({"model.norm.scheme=spannorm", "model.norm.spannorm_alpha=0.3"});
  o.vit.num_classes = 3;
  const VisionTransformer vit(o.vit);
  ASSERT_TRUE(vit.backbone().config().spannorm_alpha.has_value());
  EXPECT_EQ(*vit.backbone().config().spannorm_alpha, 0.3);
  EXPECT_EQ(vit.backbone().config().scheme, NormScheme::SpanNorm);
  const TrainOptions d = options({"model.norm.scheme=spannorm", "model.depth=4"});
  EXPECT_FALSE(d.vit.backbone.spannorm_alpha.has_value());
  EXPECT_DOUBLE_EQ(d.vit.backbone.spannorm_scale(), 0.5);
}

TEST(TrainConfigChecks, ResumeNoneIsNever) {
  EXPECT_EQ(options({"resume=none"}).resume, "never");
  EXPECT_EQ(options({"resume=never"}).resume, "never");
  EXPECT_EQ(options({"resume=auto"}).resume, "auto");
  // with_absolute_trainer_paths must not turn the keyword into a path either.
  const Config c = Config::parse(kYaml, vtrain_schema(), {"resume=none"}, "test.yaml", ".");
  EXPECT_EQ(with_absolute_trainer_paths(c, "test.yaml").get<std::string>("resume"), "none");
}

// model.preset gives the defaults of the architecture keys; a key given in
// the config overrides it (timm's keyword arguments). The keys were ignored
// under a preset: a 1-block, 32-wide ViT config trained DeiT-S while its
// config.yaml said dim 32, depth 1.
TEST(TrainConfigChecks, GivenArchitectureKeysOverrideThePreset) {
  const char* y = "name: t\nout_dir: /tmp/unused\nmodel: {img_size: 32, dim: 32, depth: 1, heads: 2}\n"
                  "data: {root: /nonexistent, repeated_aug: 1}\ntrain: {epochs: 1, batch_size: 8}\n";
  Config c = Config::parse(y, vtrain_schema(), {}, "test.yaml", ".");
  TrainOptions o = train_options(c, "test.yaml");
  EXPECT_EQ(o.preset, "deit_small");  // the default preset
  EXPECT_EQ(o.vit.backbone.dim, 32);
  EXPECT_EQ(o.vit.backbone.depth, 1);
  EXPECT_EQ(o.vit.backbone.heads, 2);
  EXPECT_EQ(o.vit.patch_size, 16);     // from the preset
  EXPECT_EQ(o.vit.backbone.mlp_ratio, 4.0);
  EXPECT_EQ(o.vit.backbone.drop_path.size(), 1u);

  // Keys not given come from the preset; the saved config records them.
  const char* tiny = "name: t\nout_dir: /tmp/unused\nmodel: {preset: deit_tiny, img_size: 32}\n"
                     "data: {root: /nonexistent, repeated_aug: 1}\ntrain: {epochs: 1, batch_size: 8}\n";
  Config t = Config::parse(tiny, vtrain_schema(), {"model.depth=1"}, "test.yaml", ".");
  EXPECT_EQ(t.get<int>("model.dim"), 384);  // the schema default, which deit_tiny does not use
  o = train_options(t, "test.yaml");
  EXPECT_EQ(o.vit.backbone.dim, 192);
  EXPECT_EQ(o.vit.backbone.heads, 3);
  EXPECT_EQ(o.vit.backbone.depth, 1);
  record_architecture(t, o);
  EXPECT_EQ(t.get<int>("model.dim"), 192);
  EXPECT_EQ(t.get<int>("model.heads"), 3);
  EXPECT_EQ(t.get<int>("model.depth"), 1);
  EXPECT_EQ(t.get<int>("model.patch_size"), 16);
  EXPECT_EQ(t.source("model.dim"), "model.preset deit_tiny");
  EXPECT_EQ(t.source("model.depth"), "command line");  // given: not rewritten
  // The recorded config builds the same model again.
  const TrainOptions again =
      train_options(Config::parse(t.to_yaml(), vtrain_schema(), {}, "config.yaml", "."), "config.yaml");
  EXPECT_EQ(again.vit.backbone.dim, 192);
  EXPECT_EQ(again.vit.backbone.heads, 3);
  EXPECT_EQ(again.vit.backbone.depth, 1);

  // A preset value that does not fit a given one says where it came from.
  const std::string msg = error_of([&] {
    train_options(Config::parse(tiny, vtrain_schema(), {"model.preset=deit_small", "model.dim=32"}, "test.yaml", "."),
                  "test.yaml");
  });
  EXPECT_NE(msg.find("model.heads = 6 (from model.preset deit_small) must divide model.dim = 32"), std::string::npos)
      << msg;
  // A custom model is what its keys (and their defaults) say; nothing is rewritten.
  Config custom = Config::parse(kYaml, vtrain_schema(), {}, "test.yaml", ".");
  const std::string before = custom.to_yaml();
  record_architecture(custom, train_options(custom, "test.yaml"));
  EXPECT_EQ(custom.to_yaml(), before);
}

}  // namespace
}  // namespace vt
