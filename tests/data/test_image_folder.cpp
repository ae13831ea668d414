#include <gtest/gtest.h>

#include "data_pipeline/image_folder.h"
#include "data_pipeline/unreadable_classes.h"
#include "data_test_util.h"

namespace vt {
namespace {

using testutil::TempDir;

void check_against_torchvision(const std::string& fixture) {
  const auto fx = testutil::load_fixture(fixture);
  const std::string root = std::string(VT_SHARED_DATA_DIR) + "/" + fx["root"].get<std::string>();
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "shared data missing: " << root;
  ImageFolder f(root);
  ASSERT_EQ(f.num_classes(), fx["num_classes"].get<int>());
  EXPECT_EQ(f.classes(), fx["classes"].get<std::vector<std::string>>());
  ASSERT_EQ(f.size(), fx["count"].get<int64_t>());
  for (const auto& s : fx["samples"]) {
    const int64_t i = s[0].get<int64_t>();
    EXPECT_EQ(f.samples()[i].path, root + "/" + s[1].get<std::string>()) << "sample " << i;
    EXPECT_EQ(f.samples()[i].label, s[2].get<int>()) << "sample " << i;
  }
}

TEST(ImageFolder, Cifar10TrainMatchesTorchvision) { check_against_torchvision("imagefolder_cifar10_train.json"); }
TEST(ImageFolder, ImagenetSamplesMatchesTorchvision) { check_against_torchvision("imagefolder_imagenet_samples.json"); }

TEST(ImageFolder, RecursiveOrderExtensionsAndCase) {
  TempDir t("if_order");
  const auto r = t.path;
  for (const char* p : {"B/z.jpg", "B/a-b/k.png", "B/a/x/m.JPEG", "B/a/n.webp", "B/readme.txt", "B/c.TIFF",
                        "a/q.bmp", "a/q.gif"})
    testutil::write_bytes(r / p, {1});
  ImageFolder f(r.string());
  // Byte order: upper case before lower case.
  ASSERT_EQ(f.classes(), (std::vector<std::string>{"B", "a"}));
  // sorted(os.walk): folders by full path ("B/a" < "B/a-b" < "B/a/x",
  // since '-' < '/'), files sorted inside each folder.
  std::vector<std::string> got;
  for (const auto& s : f.samples()) got.push_back(s.path.substr(r.string().size() + 1) + "#" + std::to_string(s.label));
  const std::vector<std::string> want = {"B/c.TIFF#0", "B/z.jpg#0", "B/a/n.webp#0", "B/a-b/k.png#0",
                                         "B/a/x/m.JPEG#0", "a/q.bmp#1"};
  EXPECT_EQ(got, want);
}

// A class with no readable image at all (all truncated or not images) is
// named; one good image is enough for a class, wherever it is.
TEST(ImageFolder, UnreadableClassesAreThoseWithoutOneReadableImage) {
  TempDir t("if_unreadable");
  const auto r = t.path;
  const std::vector<uint8_t> jpg = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(16, 12, 3));
  const std::vector<uint8_t> cut(jpg.begin(), jpg.begin() + 40);
  testutil::write_bytes(r / "a/0.jpg", jpg);
  testutil::write_bytes(r / "a/1.jpg", jpg);
  testutil::write_bytes(r / "b/0.jpg", cut);
  testutil::write_bytes(r / "b/1.png", {1, 2, 3});
  testutil::write_bytes(r / "c/0.jpg", cut);
  testutil::write_bytes(r / "c/1.jpg", jpg);  // the last one reads
  testutil::write_bytes(r / "d/0.jpg", {0xFF, 0xD8, 0xFF});
  EXPECT_EQ(unreadable_classes(ImageFolder(r.string())), (std::vector<std::string>{"b", "d"}));
}

TEST(ImageFolder, Errors) {
  try {
    ImageFolder f("/nonexistent/vt_root");
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/vt_root"), std::string::npos) << e.what();
  }
  TempDir t("if_err");
  testutil::write_bytes(t.path / "good" / "a.jpg", {1});
  testutil::write_bytes(t.path / "empty_cls" / "notes.txt", {1});
  try {
    ImageFolder f(t.path.string());
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("empty_cls"), std::string::npos) << e.what();
  }
}

TEST(ImageFolder, ExtensionFilter) {
  EXPECT_TRUE(has_image_extension("x.JpEg"));
  EXPECT_TRUE(has_image_extension("x.pgm"));
  EXPECT_FALSE(has_image_extension("x.gif"));
  EXPECT_FALSE(has_image_extension("jpg"));
}

}  // namespace
}  // namespace vt
