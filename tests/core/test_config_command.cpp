// A mistyped command as the first argument of vtrain / dittrain / veval is
// named as such, with the nearest command (core/config_command.h), and a
// config file of that name still wins.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/config_command.h"
#include "test_fs.h"

using namespace vt;

namespace {

const std::vector<std::string> kVtrain{"pack"};
const std::vector<std::string> kDittrain{"sample", "extract"};
const std::vector<std::string> kVeval{"fid", "stats", "top1"};

}  // namespace

TEST(ConfigCommand, NearestCommandIsWithinTwoEditsAndFewerThanTheWordsLetters) {
  // pakc -> pack: the swapped letters are 2 substitutions; smaple -> sample the same.
  EXPECT_EQ(nearest_command("pakc", kVtrain), "pack");
  EXPECT_EQ(nearest_command("smaple", kDittrain), "sample");
  EXPECT_EQ(nearest_command("extact", kDittrain), "extract");  // one letter dropped
  EXPECT_EQ(nearest_command("stat", kVeval), "stats");
  EXPECT_EQ(nearest_command("top", kVeval), "top1");
  // sampel: 2 from sample, 6 from extract.
  EXPECT_EQ(nearest_command("sampel", kDittrain), "sample");
  // Three edits from every command, or as many edits as letters: none.
  EXPECT_EQ(nearest_command("train", kVtrain), "");  // t-r-a-i-n vs p-a-c-k: 4 edits
  EXPECT_EQ(nearest_command("xy", kVeval), "");      // 3 edits from fid, 4 from top1
  EXPECT_EQ(nearest_command("ab", {"cd"}), "");      // 2 edits, but that replaces every letter
  EXPECT_EQ(nearest_command("p", kVtrain), "");      // 3 insertions
}

TEST(ConfigCommand, MessageNamesTheWordAndTheNearestCommandOrListsThemAll) {
  EXPECT_EQ(unknown_command_message("pakc", kVtrain), "unknown command 'pakc'; did you mean 'pack'?");
  EXPECT_EQ(unknown_command_message("smaple", kDittrain), "unknown command 'smaple'; did you mean 'sample'?");
  EXPECT_EQ(unknown_command_message("evaluate", kVeval), "unknown command 'evaluate' (commands: fid, stats, top1)");
}

TEST(ConfigCommand, FirstArgumentIsACommandTypoOnlyWhenNoConfigOfThatNameExists) {
  vt_test::TmpDir tmp;
  std::filesystem::create_directories(tmp.file("configs"));
  tmp.write("configs/smaple.yaml", "name: a\n");
  const std::vector<std::string> dirs{tmp.file("configs")};
  const std::vector<std::string> cfg{"cifar10_vit_tiny_siamese", "out=x"};
  EXPECT_EQ(mistyped_command("pakc", cfg, kVtrain, dirs), "unknown command 'pakc'; did you mean 'pack'?");
  // Near a command without a config after it: still a typo.
  EXPECT_EQ(mistyped_command("pakc", {}, kVtrain, dirs), "unknown command 'pakc'; did you mean 'pack'?");
  // Far from every command but followed by a CONFIG: the command list.
  EXPECT_EQ(mistyped_command("evaluate", cfg, kVtrain, dirs), "unknown command 'evaluate' (commands: pack)");
  // A config named like a typo is a config.
  EXPECT_EQ(mistyped_command("smaple", {"ckpt=x"}, kDittrain, dirs), "");
  // Commands, paths, files and overrides are read as they are.
  EXPECT_EQ(mistyped_command("pack", cfg, kVtrain, dirs), "");
  EXPECT_EQ(mistyped_command("configs/pakc.yaml", {}, kVtrain, dirs), "");
  EXPECT_EQ(mistyped_command("pakc.yaml", {}, kVtrain, dirs), "");
  EXPECT_EQ(mistyped_command("train.lr=1", {}, kVtrain, dirs), "");
  // A missing config far from every command, with overrides after it: the
  // config error (not found) is the one to give.
  EXPECT_EQ(mistyped_command("cifar10_vit_tiny", {"train.lr=1"}, kVtrain, dirs), "");
}
