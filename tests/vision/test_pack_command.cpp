// `vtrain pack` (vision/pack_command.h): which splits it packs where, and
// its argument errors. The shards themselves: tests/data/test_packed_shards.cpp.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/file_lock.h"
#include "data_pipeline/packed_shards.h"
#include "vision/pack_command.h"
#include "vision/train_config.h"
#include "vision_test_util.h"

namespace vt {
namespace {

namespace fs = std::filesystem;

class PackCommandTest : public ::testing::Test {
 protected:
  void SetUp() override { vt_test::make_cifar_subset(tmp_.path() + "/data", 2, 3, 2); }
  Config config(const std::vector<std::string>& ov = {}) const {
    const std::string yaml = "model: {preset: custom, img_size: 32, patch_size: 8, dim: 16, depth: 1, heads: 2}\n"
                             "data: {root: " + tmp_.path() + "/data, val_split: test}\n";
    return Config::parse(yaml, vtrain_schema(), ov, "test.yaml", ".");
  }
  std::string out(const std::string& n) const { return tmp_.path() + "/" + n; }
  vt_test::TmpDir tmp_;
};

TEST_F(PackCommandTest, BothSplitsByDefaultOneWithSplit) {
  run_pack(config(), "test.yaml", {{"out", out("all")}, {"shard_size", "4"}});
  const ShardManifest train = read_shard_manifest(out("all") + "/train");
  const ShardManifest test = read_shard_manifest(out("all") + "/test");
  EXPECT_EQ(train.images, 6);
  EXPECT_EQ(train.shards, 2);  // 6 images, 4 per shard
  EXPECT_EQ(test.images, 4);
  EXPECT_EQ(train.classes, (std::vector<std::string>{"airplane", "automobile"}));
  EXPECT_EQ(train.max_side, 0);
  EXPECT_EQ(train.quality, 0);
  run_pack(config(), "test.yaml", {{"out", out("val")}, {"split", "val"}, {"max_side", "16"}, {"quality", "80"}});
  EXPECT_FALSE(fs::exists(out("val") + "/train"));
  const ShardManifest v = read_shard_manifest(out("val") + "/test");
  EXPECT_EQ(v.max_side, 16);
  EXPECT_EQ(v.quality, 80);
  EXPECT_EQ(v.shard_size, 5000);
  // data.train_split = data.val_split: packed once.
  run_pack(config({"data.val_split=train"}), "test.yaml", {{"out", out("same")}});
  EXPECT_EQ(std::vector<fs::path>(fs::directory_iterator(out("same")), fs::directory_iterator()).size(), 1u);
}

// split=val where data.val_split names the train folder packs that folder
// (it wrote nothing and said nothing).
TEST_F(PackCommandTest, ValSplitEqualToTrainSplitIsPacked) {
  run_pack(config({"data.val_split=train"}), "test.yaml", {{"out", out("v")}, {"split", "val"}});
  EXPECT_EQ(read_shard_manifest(out("v") + "/train").images, 6);  // 2 classes x 3 train images
}

// One pack per out= at a time: a second one is refused naming the holder.
TEST_F(PackCommandTest, ASecondPackOnTheSameOutIsRefused) {
  const FileLock held(tmp_.path() + "/.busy.lock");
  const std::string e = vt_test::error_of([&] { run_pack(config(), "test.yaml", {{"out", out("busy")}}); });
  EXPECT_NE(e.find("pack: '" + out("busy") + "' is being written by another process (pid "), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(out("busy") + "/train"));
}

TEST_F(PackCommandTest, BadArgumentsNameThemselves) {
  auto err = [&](const std::map<std::string, std::string>& a) {
    return vt_test::error_of([&] { run_pack(config(), "test.yaml", a); });
  };
  EXPECT_NE(err({}).find("out=DIR"), std::string::npos);
  EXPECT_NE(err({{"out", out("x")}, {"split", "test"}}).find("split=test"), std::string::npos);
  EXPECT_NE(err({{"out", out("x")}, {"max_side", "0"}}).find("max_side=0"), std::string::npos);
  EXPECT_NE(err({{"out", out("x")}, {"max_side", "64"}, {"quality", "0"}}).find("quality=0"), std::string::npos);
  EXPECT_NE(err({{"out", out("x")}, {"quality", "90"}}).find("max_side"), std::string::npos);
  EXPECT_NE(err({{"out", out("x")}, {"shard_size", "many"}}).find("shard_size=many"), std::string::npos);
  EXPECT_FALSE(fs::exists(out("x")));
}

// out= the data root (or a folder inside a split being packed) would write
// the shards among the images (accepted silently); a config that reads
// shards has no images to pack (it failed with an ImageFolder error).
TEST_F(PackCommandTest, OutInsideTheImagesAndAShardsConfigAreRefused) {
  const std::string root = tmp_.path() + "/data";
  auto err = [&](const std::vector<std::string>& ov, const std::string& o) {
    return vt_test::error_of([&] { run_pack(config(ov), "test.yaml", {{"out", o}}); });
  };
  std::string e = err({}, root);
  EXPECT_NE(e.find("out=" + root + " is data.root"), std::string::npos) << e;
  e = err({}, root + "/train/packed");
  EXPECT_NE(e.find("inside data.root's 'train' folder"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(root + "/train/packed"));
  EXPECT_EQ(std::vector<fs::path>(fs::directory_iterator(root), fs::directory_iterator()).size(), 2u);  // train, test
  e = err({"data.format=shards"}, out("s"));
  EXPECT_NE(e.find("data.format is 'shards' (command line)"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(out("s")));
  // A folder beside the images is fine.
  run_pack(config(), "test.yaml", {{"out", root + "/packed"}, {"split", "val"}});
  EXPECT_EQ(read_shard_manifest(root + "/packed/test").images, 4);
}

}  // namespace
}  // namespace vt
