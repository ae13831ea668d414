// CIFAR-10 binary release -> image folder (data_pipeline/cifar10_binary.h) on
// small batches written here in the release's record format: 1 label byte,
// then the 32x32 image as R, G and B planes of 1024 bytes. Every image
// carries its position in the release (k) in its pixels, so each JPEG is
// matched to the record it must come from.
#include <gtest/gtest.h>
#include <turbojpeg.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data_pipeline/cifar10_binary.h"
#include "test_fs.h"

namespace vt {
namespace {

namespace fs = std::filesystem;

// Pixel (channel c, row y, column x) of image k: smooth, different per
// channel and per axis, and shifted by 2 per k.
int pixel(int k, int c, int y, int x) { return 5 + 3 * x + 2 * y + 20 * c + 2 * k; }

std::string record(int label, int k) {
  std::string r(1, static_cast<char>(label));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 32; ++y)
      for (int x = 0; x < 32; ++x) r += static_cast<char>(pixel(k, c, y, x));
  return r;
}

// Labels of the training batches: batch b (1..5) holds {b%3, (b+1)%3, 0, 2};
// the test batch {2, 2, 1}. Classes cat, dog, ship.
struct Release {
  vt_test::TmpDir dir;
  std::string src;
  Release() : src(dir.path() + "/cifar-10-batches-bin") {
    fs::create_directories(src);
    std::ofstream(src + "/batches.meta.txt") << "cat\ndog\nship\n\n";  // the release ends with a blank line
    int k = 0;
    for (int b = 1; b <= 5; ++b) {
      std::string bytes;
      for (int label : {b % 3, (b + 1) % 3, 0, 2}) bytes += record(label, k++);
      std::ofstream(src + "/data_batch_" + std::to_string(b) + ".bin", std::ios::binary) << bytes;
    }
    std::string test;
    for (int label : {2, 2, 1}) test += record(label, k++);
    std::ofstream(src + "/test_batch.bin", std::ios::binary) << test;
  }
};

struct Decoded {
  std::vector<uint8_t> rgb;
  int w = 0, h = 0, subsamp = -1;
};

Decoded decode(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<unsigned char> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  Decoded d;
  tjhandle h = tjInitDecompress();
  int cs = 0;
  EXPECT_EQ(tjDecompressHeader3(h, b.data(), b.size(), &d.w, &d.h, &d.subsamp, &cs), 0) << path;
  d.rgb.resize(static_cast<size_t>(d.w) * d.h * 3);
  EXPECT_EQ(tjDecompress2(h, b.data(), b.size(), d.rgb.data(), d.w, 0, d.h, TJPF_RGB, 0), 0) << path;
  tjDestroy(h);
  return d;
}

// The JPEG at `path` is image k: 32x32, 4:2:0, mean absolute error under 3
// and no overall shift (another k is 2 off on every pixel).
void expect_image(const std::string& path, int k) {
  ASSERT_TRUE(fs::is_regular_file(path)) << path;
  const Decoded d = decode(path);
  ASSERT_EQ(d.w, 32) << path;
  ASSERT_EQ(d.h, 32) << path;
  EXPECT_EQ(d.subsamp, TJSAMP_420) << path;
  double abs_sum = 0, sum = 0;
  for (int y = 0; y < 32; ++y)
    for (int x = 0; x < 32; ++x)
      for (int c = 0; c < 3; ++c) {
        const double e = d.rgb[(y * 32 + x) * 3 + c] - pixel(k, c, y, x);
        abs_sum += std::abs(e);
        sum += e;
      }
  EXPECT_LT(abs_sum / 3072, 3.0) << path << " vs image " << k;
  EXPECT_LT(std::abs(sum / 3072), 0.8) << path << " vs image " << k;
}

int jpg_count(const fs::path& dir) {
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".jpg";
  return n;
}

TEST(Cifar10Binary, WritesTheFolderTheConfigsRead) {
  Release r;
  const std::string out = r.dir.path() + "/cifar10";
  const CifarFolderCounts c = cifar10_binary_to_folder(r.src, out);
  EXPECT_EQ(c.train, (std::map<std::string, int64_t>{{"cat", 8}, {"dog", 3}, {"ship", 9}}));
  EXPECT_EQ(c.test, (std::map<std::string, int64_t>{{"cat", 0}, {"dog", 1}, {"ship", 2}}));
  EXPECT_EQ(jpg_count(out + "/train/cat"), 8);
  EXPECT_EQ(jpg_count(out + "/train/dog"), 3);
  EXPECT_EQ(jpg_count(out + "/train/ship"), 9);
  EXPECT_EQ(jpg_count(out + "/test/cat"), 0);
  EXPECT_EQ(jpg_count(out + "/test/dog"), 1);
  EXPECT_EQ(jpg_count(out + "/test/ship"), 2);
  // Numbered per class in record order, batch 1 first. Batch 1 is labels
  // 1, 2, 0, 2 (images 0-3), batch 2 2, 0, 0, 2 (images 4-7), ...
  expect_image(out + "/train/dog/0000.jpg", 0);
  expect_image(out + "/train/ship/0000.jpg", 1);
  expect_image(out + "/train/cat/0000.jpg", 2);
  expect_image(out + "/train/ship/0001.jpg", 3);
  expect_image(out + "/train/ship/0002.jpg", 4);
  expect_image(out + "/train/cat/0001.jpg", 5);
  expect_image(out + "/train/cat/0002.jpg", 6);
  expect_image(out + "/train/dog/0001.jpg", 9);   // batch 3: 0, 1, 0, 2
  expect_image(out + "/train/ship/0008.jpg", 19);  // the last training record
  expect_image(out + "/test/ship/0000.jpg", 20);
  expect_image(out + "/test/ship/0001.jpg", 21);
  expect_image(out + "/test/dog/0000.jpg", 22);
  EXPECT_FALSE(fs::exists(out + ".partial"));
  // The top level holds exactly the two splits.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(out)) entries += e.is_directory();
  EXPECT_EQ(entries, 2);
}

std::string error_of(const std::string& src, const std::string& out) {
  try {
    cifar10_binary_to_folder(src, out);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Cifar10Binary, RefusesBadInputNamingTheFile) {
  {
    Release r;  // a batch cut inside a record
    std::ofstream(r.src + "/data_batch_3.bin", std::ios::binary) << record(0, 0) << record(1, 1).substr(0, 100);
    const std::string e = error_of(r.src, r.dir.path() + "/out");
    EXPECT_NE(e.find("data_batch_3.bin' has 3173 bytes, not a whole number of 3073-byte records"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(r.dir.path() + "/out"));
  }
  {
    Release r;  // a label beyond batches.meta.txt's three classes
    std::ofstream(r.src + "/test_batch.bin", std::ios::binary) << record(0, 0) << record(3, 1);
    const std::string e = error_of(r.src, r.dir.path() + "/out");
    EXPECT_NE(e.find("test_batch.bin' record 1 has label 3, batches.meta.txt names 3 classes"), std::string::npos) << e;
    EXPECT_FALSE(fs::exists(r.dir.path() + "/out"));
  }
  {
    Release r;
    fs::remove(r.src + "/data_batch_5.bin");
    const std::string e = error_of(r.src, r.dir.path() + "/out");
    EXPECT_NE(e.find("data_batch_5.bin' is missing"), std::string::npos) << e;
  }
  {
    Release r;
    std::ofstream(r.src + "/batches.meta.txt") << "cat\n../up\n";
    const std::string e = error_of(r.src, r.dir.path() + "/out");
    EXPECT_NE(e.find("names class '../up', not a folder name"), std::string::npos) << e;
  }
  {
    Release r;  // an existing folder is never written into
    fs::create_directories(r.dir.path() + "/out/train");
    const std::string e = error_of(r.src, r.dir.path() + "/out");
    EXPECT_NE(e.find("out' already exists"), std::string::npos) << e;
    EXPECT_EQ(jpg_count(r.dir.path() + "/out/train"), 0);
  }
}

}  // namespace
}  // namespace vt
