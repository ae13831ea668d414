// The shipped configs load against vtrain's schema, hold what the README
// promises (DeiT recipe values, CIFAR-10 paths), and the Pre/Post-Norm twins
// differ from the siamese config only in the scheme (and run name).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/config_paths.h"
#include "vision/train_config.h"

namespace vt {
namespace {

const std::string kConfigs = std::string(VT_FIXTURES_DIR) + "/../../configs";

TrainOptions load(const std::string& name, const std::vector<std::string>& ov = {}) {
  const std::string path = find_config(name, {kConfigs});
  return train_options(Config::load(path, vtrain_schema(), ov), path);
}

TEST(Configs, DeitSmallSiameseIsTheDeitRecipe) {
  TrainOptions o = load("deit_s_siamese");
  EXPECT_EQ(o.vit.backbone.scheme, NormScheme::Siamese);
  EXPECT_EQ(o.vit.backbone.dim, 384);
  EXPECT_EQ(o.vit.backbone.depth, 12);
  EXPECT_EQ(o.vit.backbone.heads, 6);
  EXPECT_EQ(o.vit.patch_size, 16);
  EXPECT_EQ(o.epochs, 300);
  EXPECT_EQ(o.batch_size, 1024);
  EXPECT_DOUBLE_EQ(o.lr, 5e-4 * 1024 / 512);
  EXPECT_DOUBLE_EQ(o.sched.warmup_epochs, 5);
  EXPECT_DOUBLE_EQ(o.sched.warmup_lr, 1e-6);
  EXPECT_DOUBLE_EQ(o.sched.min_lr, 1e-5);
  EXPECT_DOUBLE_EQ(o.weight_decay, 0.05);
  EXPECT_DOUBLE_EQ(o.label_smoothing, 0.1);
  EXPECT_DOUBLE_EQ(o.mixup_alpha, 0.8);
  EXPECT_DOUBLE_EQ(o.cutmix_alpha, 1.0);
  EXPECT_TRUE(o.rand_augment);
  EXPECT_DOUBLE_EQ(o.erasing_prob, 0.25);
  EXPECT_EQ(o.repeated_aug, 3);
  EXPECT_FLOAT_EQ(o.vit.backbone.drop_path.back(), 0.1f);
  EXPECT_TRUE(o.ema);
  EXPECT_DOUBLE_EQ(o.ema_decay, 0.99996);
  EXPECT_FALSE(o.clip_grad.has_value());
  EXPECT_EQ(o.val_split, "val");
}

TEST(Configs, TwinsDifferOnlyInScheme) {
  const std::string base = Config::load(find_config("deit_s_siamese", {kConfigs}), vtrain_schema()).to_yaml();
  for (const auto& [name, scheme] : {std::pair<std::string, std::string>{"deit_s_prenorm", "pre"}, {"deit_s_postnorm", "post"}}) {
    Config twin = Config::load(find_config(name, {kConfigs}), vtrain_schema(),
                               {"model.norm.scheme=siamese", "name=deit_s_siamese"});
    EXPECT_EQ(twin.to_yaml(), base) << name;
    EXPECT_EQ(load(name).vit.backbone.scheme, norm_scheme_from_name(scheme));
  }
  Config twin = Config::load(find_config("cifar10_vit_tiny_prenorm", {kConfigs}), vtrain_schema(),
                             {"model.norm.scheme=siamese", "name=cifar10_vit_tiny_siamese"});
  EXPECT_EQ(twin.to_yaml(), Config::load(find_config("cifar10_vit_tiny_siamese", {kConfigs}), vtrain_schema()).to_yaml());
}

TEST(Configs, CifarDataRootIsRelativeToTheRepository) {
  TrainOptions o = load("cifar10_vit_tiny_siamese.yaml");
  EXPECT_EQ(std::filesystem::weakly_canonical(o.data_root),
            std::filesystem::weakly_canonical(std::string(VT_SHARED_DATA_DIR) + "/cifar10"));
  EXPECT_EQ(o.val_split, "test");
  EXPECT_EQ(o.vit.img_size, 32);
  EXPECT_EQ(o.vit.patch_size, 4);
  // A command-line path is taken relative to the current directory.
  EXPECT_EQ(load("cifar10_vit_tiny_siamese", {"data.root=rel/dir"}).data_root, "rel/dir");
  EXPECT_THROW(find_config("no_such_config", {kConfigs}), ConfigError);
}

TEST(Configs, WithAbsolutePathsKeepsTheirMeaning) {
  namespace fs = std::filesystem;
  const std::string path = find_config("cifar10_vit_tiny_siamese", {kConfigs});
  const Config c = Config::load(path, vtrain_schema(), {"out_dir=runs_x", "resume=ck/step_3"});
  const Config a = with_absolute_trainer_paths(c, path);
  // File value: relative to the repository (the config directory's parent);
  // command-line values and out_dir: relative to the working directory.
  EXPECT_EQ(a.get<std::string>("data.root"),
            fs::path(std::string(VT_SHARED_DATA_DIR) + "/cifar10").lexically_normal().string());
  EXPECT_EQ(a.get<std::string>("out_dir"), (fs::current_path() / "runs_x").string());
  EXPECT_EQ(a.get<std::string>("resume"), (fs::current_path() / "ck/step_3").string());
  EXPECT_EQ(a.source("resume"), "command line");
  EXPECT_EQ(a.get<std::string>("name"), c.get<std::string>("name"));
  EXPECT_EQ(a.get<int>("train.batch_size"), c.get<int>("train.batch_size"));
  // Idempotent, whatever file it is said to come from.
  EXPECT_EQ(with_absolute_trainer_paths(a, "/elsewhere/cfg/x.yaml").to_yaml(), a.to_yaml());
  EXPECT_EQ(train_options(a, "/elsewhere/cfg/x.yaml").data_root, a.get<std::string>("data.root"));
  // "auto" / "never" are not paths.
  EXPECT_EQ(with_absolute_trainer_paths(Config::load(path, vtrain_schema()), path).get<std::string>("resume"),
            Config::load(path, vtrain_schema()).get<std::string>("resume"));
}

}  // namespace

// "Did you mean" on the keys a new user typed (issue examples): the name's
// last component decides, and a key sharing no word with it is never offered.
std::string suggested(const std::string& key) {
  try {
    Config::parse("model: {preset: deit_tiny}\n", vtrain_schema(), {key + "=1"}, "test.yaml", ".");
  } catch (const std::exception& e) {
    const std::string m = e.what();
    const size_t at = m.find("did you mean '");
    if (at == std::string::npos) return "(none)";
    return m.substr(at + 14, m.find('\'', at + 14) - at - 14);
  }
  return "(accepted)";
}

TEST(Configs, DidYouMeanFollowsTheLastComponent) {
  EXPECT_EQ(suggested("train.learning_rate"), "train.lr");  // was train.max_nonfinite
  EXPECT_EQ(suggested("lr"), "train.lr");                   // was log
  EXPECT_EQ(suggested("cfg"), "(none)");                    // was log
  EXPECT_EQ(suggested("step"), "train.max_steps");          // was seed
  EXPECT_EQ(suggested("maxside"), "(none)");
  EXPECT_EQ(suggested("train.epoch"), "train.epochs");
  EXPECT_EQ(suggested("train.lrr"), "train.lr");
  EXPECT_EQ(suggested("trian.lr"), "train");  // the unknown section is named first
  EXPECT_EQ(suggested("train.wamrup_epochs"), "train.warmup_epochs");
  EXPECT_EQ(suggested("train.foo"), "(none)");  // shares only the section
}

}  // namespace vt
