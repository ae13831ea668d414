// DiT's crop (train.py center_crop_arr after torchvision's PIL loader) on
// every photo of ../shared/data/imagenet-samples at S = 256: small images
// (shorter side < 256, upsampled), odd sizes and large ones (box-halved)
// must give PIL's bytes exactly. The digests come from
// tools/dit_crop_fixture.py (Pillow); the test decodes each file the way
// `dittrain extract` does (decode_image, then adm_center_crop).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "data_pipeline/decode.h"
#include "data_pipeline/transforms.h"
#include "diffusion/fingerprint.h"

namespace vt {
namespace {

namespace fs = std::filesystem;

std::string sha256_hex(const uint8_t* p, size_t n) {
  Sha256 h;
  h.add(p, n);
  return h.hex();
}

TEST(DitCenterCrop, EveryImagenetSampleMatchesPilBitForBit) {
  const std::string root = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  if (!fs::is_directory(root)) GTEST_SKIP() << root << " missing";
  std::ifstream in(std::string(VT_FIXTURES_DIR) + "/diffusion/dit_center_crop_imagenet_samples_256.tsv");
  ASSERT_TRUE(in) << "fixture missing";
  std::string line;
  int n = 0, small = 0, halved = 0, mismatched = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string rel, size, mode, want;
    std::getline(f, rel, '\t'), std::getline(f, size, '\t'), std::getline(f, mode, '\t'), std::getline(f, want);
    const std::vector<uint8_t> bytes = read_file_bytes(root + "/" + rel);
    const cv::Mat rgb = decode_image(bytes.data(), bytes.size(), rel).rgb;
    ASSERT_EQ(std::to_string(rgb.cols) + "x" + std::to_string(rgb.rows), size) << rel;
    const cv::Mat crop = adm_center_crop(rgb, 256);
    ASSERT_EQ(crop.cols, 256);
    ASSERT_EQ(crop.rows, 256);
    ASSERT_TRUE(crop.isContinuous());
    const bool ok = sha256_hex(crop.data, crop.total() * 3) == want;
    if (!ok && ++mismatched <= 5) ADD_FAILURE() << rel << " (" << size << ", " << mode << ") differs from PIL";
    small += std::min(rgb.cols, rgb.rows) < 256;
    halved += std::min(rgb.cols, rgb.rows) >= 512;
    ++n;
  }
  EXPECT_EQ(n, 1000);
  EXPECT_EQ(mismatched, 0);
  // The size classes this test covers (from the fixture's sizes).
  EXPECT_GT(small, 0);
  EXPECT_GT(halved, 0);
}

}  // namespace
}  // namespace vt
