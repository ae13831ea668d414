// vtrain config validation (train_options): every bad value fails as a
// ConfigError naming its key, before any data or run directory is touched,
// and the documented conventions hold (resume=none is never, unset
// max_steps / max_images mean no limit).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config_paths.h"
#include "vision/train_config.h"

namespace vt {
namespace {

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

TEST(TrainConfigChecks, OutOfRangeValuesNameTheirKey) {
  // {override, key the message must start with}
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"eval.batch_size=3000000000", "eval.batch_size"},  // does not fit the loader's int
      {"eval.batch_size=0", "eval.batch_size"},
      {"train.batch_size=2147483648", "train.batch_size"},
      {"eval.max_images=0", "eval.max_images"},
      {"eval.max_images=-5", "eval.max_images"},
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
      {"device=cuda", "device"},
      {"device=tpu", "device"},
  };
  for (const auto& [ov, key] : cases) {
    const std::string m = config_error({ov});
    EXPECT_EQ(m.rfind(key + " (command line)", 0), 0u) << ov << " -> " << m;
  }
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
  const std::string m = config_error({"model.preset=deit_tiny", "model.img_size=40"});
  EXPECT_EQ(m.rfind("model.img_size", 0), 0u) << m;
  EXPECT_NE(m.find("deit_tiny"), std::string::npos) << m;
}

TEST(TrainConfigChecks, BoundaryValuesAreAccepted) {
  const TrainOptions o = options({"data.workers=256", "data.prefetch=1", "data.mixup_prob=1", "data.mixup_prob=0",
                                  "train.weight_decay=0", "train.warmup_epochs=0", "threads=0", "train.max_steps=1",
                                  "eval.max_images=1", "eval.batch_size=2147483647", "data.repeated_aug=1"});
  EXPECT_EQ(o.workers, 256);
  EXPECT_EQ(o.eval_batch_size, 2147483647);
  ASSERT_TRUE(o.max_steps.has_value());
  EXPECT_EQ(*o.max_steps, 1);
  ASSERT_TRUE(o.eval_max_images.has_value());
  EXPECT_EQ(*o.eval_max_images, 1);
  // Unset: no limits.
  const TrainOptions d = options({});
  EXPECT_FALSE(d.max_steps.has_value());
  EXPECT_FALSE(d.eval_max_images.has_value());
}

TEST(TrainConfigChecks, ResumeNoneIsNever) {
  EXPECT_EQ(options({"resume=none"}).resume, "never");
  EXPECT_EQ(options({"resume=never"}).resume, "never");
  EXPECT_EQ(options({"resume=auto"}).resume, "auto");
  // with_absolute_trainer_paths must not turn the keyword into a path either.
  const Config c = Config::parse(kYaml, vtrain_schema(), {"resume=none"}, "test.yaml", ".");
  EXPECT_EQ(with_absolute_trainer_paths(c, "test.yaml").get<std::string>("resume"), "none");
}

}  // namespace
}  // namespace vt
