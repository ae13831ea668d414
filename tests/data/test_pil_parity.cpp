// Resampling and RandAugment ops against Pillow outputs written by
// tools/data_fixtures.py (pil_ops.json).
#include <gtest/gtest.h>

#include "data_pipeline/randaugment.h"
#include "data_pipeline/resample.h"
#include "data_test_util.h"

namespace vt {
namespace {

struct PilFixture {
  nlohmann::json j;
  int w, h;
  cv::Mat input;
  cv::Vec3b fill;
  PilFixture() : j(testutil::load_fixture("pil_ops.json")) {
    w = j["width"];
    h = j["height"];
    input = testutil::mat_from_flat(j["input"].get<std::vector<int>>(), w, h);
    const auto f = j["fill"].get<std::vector<int>>();
    fill = cv::Vec3b(f[0], f[1], f[2]);
  }
  cv::Mat op(const std::string& name) const {
    return testutil::mat_from_flat(j["ops"][name].get<std::vector<int>>(), w, h);
  }
};

const PilFixture& fx() {
  static PilFixture f;
  return f;
}

TEST(PilParity, ResizeMatchesPillow) {
  for (const auto& r : fx().j["resize"]) {
    const int ow = r["w"], oh = r["h"];
    const std::string f = r["filter"];
    const ResampleFilter filt = f == "bicubic" ? ResampleFilter::Bicubic
                                : f == "box"   ? ResampleFilter::Box
                                               : ResampleFilter::Bilinear;
    std::array<double, 4> box{0, 0, 0, 0};
    if (!r["box"].is_null())
      for (int i = 0; i < 4; ++i) box[i] = r["box"][i].get<double>();
    const cv::Mat got = resize_pil(fx().input, ow, oh, filt, box);
    const cv::Mat want = testutil::mat_from_flat(r["out"].get<std::vector<int>>(), ow, oh);
    EXPECT_LE(testutil::max_abs_diff(got, want), 0) << f << " " << ow << "x" << oh;
    // The plain C++ passes, the SIMD passes' reference (test_resample_simd).
    const cv::Mat scalar = resize_pil_scalar(fx().input, ow, oh, filt, box);
    EXPECT_LE(testutil::max_abs_diff(scalar, want), 0) << "scalar " << f << " " << ow << "x" << oh;
  }
}

TEST(PilParity, PointTables) {
  for (auto& [k, v] : fx().j["posterize"].items()) {
    const auto lut = posterize_lut(std::stoi(k));
    const auto want = v.get<std::vector<int>>();
    for (int i = 0; i < 256; ++i) ASSERT_EQ(lut[i], want[i]) << "posterize bits " << k << " v " << i;
  }
  for (auto& [k, v] : fx().j["solarize"].items()) {
    const auto lut = solarize_lut(std::stoi(k));
    const auto want = v.get<std::vector<int>>();
    for (int i = 0; i < 256; ++i) ASSERT_EQ(lut[i], want[i]) << "solarize thresh " << k << " v " << i;
  }
  for (auto& [k, v] : fx().j["solarize_add"].items()) {
    const auto lut = solarize_add_lut(std::stoi(k));
    const auto want = v.get<std::vector<int>>();
    for (int i = 0; i < 256; ++i) ASSERT_EQ(lut[i], want[i]) << "solarize_add " << k << " v " << i;
  }
}

TEST(PilParity, GrayIsPillowL) {
  const cv::Mat g = pil_gray(fx().input);
  const auto want = fx().j["gray"].get<std::vector<int>>();
  for (int i = 0; i < fx().w * fx().h; ++i) ASSERT_EQ(g.data[i], want[i]) << i;
}

TEST(PilParity, HistogramOps) {
  EXPECT_EQ(testutil::max_abs_diff(pil_autocontrast(fx().input), fx().op("autocontrast")), 0);
  EXPECT_EQ(testutil::max_abs_diff(pil_equalize(fx().input), fx().op("equalize")), 0);
  EXPECT_EQ(testutil::max_abs_diff(pil_point(fx().input, solarize_lut(0)), fx().op("invert")), 0);
}

TEST(PilParity, EnhanceOps) {
  for (const char* f : {"0.19", "1.0", "1.73"}) {
    const float v = std::stof(f);
    EXPECT_LE(testutil::max_abs_diff(pil_color(fx().input, v), fx().op(std::string("color_") + f)), 0) << f;
    EXPECT_LE(testutil::max_abs_diff(pil_contrast(fx().input, v), fx().op(std::string("contrast_") + f)), 0) << f;
    EXPECT_LE(testutil::max_abs_diff(pil_brightness(fx().input, v), fx().op(std::string("brightness_") + f)), 0) << f;
    EXPECT_LE(testutil::max_abs_diff(pil_sharpness(fx().input, v), fx().op(std::string("sharpness_") + f)), 0) << f;
  }
}

TEST(PilParity, GeometricOps) {
  for (double d : {17.0, -25.5}) {
    char name[32];
    std::snprintf(name, sizeof name, "rotate_%.1f", d);
    EXPECT_LE(testutil::max_abs_diff(pil_rotate(fx().input, d, fx().fill), fx().op(name)), 0) << name;
  }
  auto affine = [&](std::array<double, 6> m) { return affine_pil(fx().input, m, AffineFilter::Bicubic, fx().fill); };
  EXPECT_LE(testutil::max_abs_diff(affine({1, 0.2, 0, 0, 1, 0}), fx().op("shearx_0.2")), 0);
  EXPECT_LE(testutil::max_abs_diff(affine({1, -0.27, 0, 0, 1, 0}), fx().op("shearx_-0.27")), 0);
  EXPECT_LE(testutil::max_abs_diff(affine({1, 0, 0, 0.2, 1, 0}), fx().op("sheary_0.2")), 0);
  EXPECT_LE(testutil::max_abs_diff(affine({1, 0, 0, -0.27, 1, 0}), fx().op("sheary_-0.27")), 0);
  EXPECT_LE(testutil::max_abs_diff(affine({1, 0, 3.4, 0, 1, 0}), fx().op("translatex_3.4")), 0);
  EXPECT_LE(testutil::max_abs_diff(affine({1, 0, -6.0, 0, 1, 0}), fx().op("translatex_-6.0")), 0);
  EXPECT_LE(testutil::max_abs_diff(affine({1, 0, 0, 0, 1, 3.4}), fx().op("translatey_3.4")), 0);
  EXPECT_LE(testutil::max_abs_diff(affine({1, 0, 0, 0, 1, -6.0}), fx().op("translatey_-6.0")), 0);
}

TEST(PilParity, RandAugOpLevelsMapToRecipeParameters) {
  // Level -> parameter mapping (docs/recipes.md §3), checked through the op result:
  // level 9 posterize keeps 4 - int(0.9*4) = 1 bit; solarize threshold
  // 256 - int(0.9*256) = 26; solarize-add adds int(0.9*110) = 99;
  // brightness factor 1 - 0.81 = 0.19 with sign -1.
  const cv::Mat& in = fx().input;
  const RandAugmentParams p;
  EXPECT_EQ(testutil::max_abs_diff(randaug_apply(in, RandAugOp::PosterizeIncreasing, 9, 1, p), pil_point(in, posterize_lut(1))), 0);
  EXPECT_EQ(testutil::max_abs_diff(randaug_apply(in, RandAugOp::SolarizeIncreasing, 9, 1, p), pil_point(in, solarize_lut(26))), 0);
  EXPECT_EQ(testutil::max_abs_diff(randaug_apply(in, RandAugOp::SolarizeAdd, 9, 1, p), pil_point(in, solarize_add_lut(99))), 0);
  EXPECT_LE(testutil::max_abs_diff(randaug_apply(in, RandAugOp::BrightnessIncreasing, 9, -1, p), fx().op("brightness_0.19")), 0);
  // Posterize at level 10 keeps 0 bits: black.
  EXPECT_EQ(cv::countNonZero(randaug_apply(in, RandAugOp::PosterizeIncreasing, 10, 1, p).reshape(1)), 0);
  // TranslateXRel at level 10: 0.45 * width pixels.
  const cv::Mat t = randaug_apply(in, RandAugOp::TranslateXRel, 10, -1, p);
  EXPECT_EQ(testutil::max_abs_diff(t, affine_pil(in, {1, 0, -0.45 * in.cols, 0, 1, 0}, AffineFilter::Bicubic, p.fill)), 0);
}

}  // namespace
}  // namespace vt
