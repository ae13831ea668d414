#include <gtest/gtest.h>

#include <cmath>

#include "data_pipeline/randaugment.h"
#include "data_pipeline/transforms.h"
#include "data_test_util.h"

namespace vt {
namespace {

TEST(Transforms, RrcTryFormula) {
  // W=H=100, u_area=0.5 -> target = 100^2 * 0.54 = 5400; u_ratio = 0.5 ->
  // aspect = exp(0) = 1 -> w = h = round(sqrt(5400)) = round(73.48) = 73.
  auto a = rrc_try(100, 100, 0.5, 0.5);
  ASSERT_TRUE(a);
  EXPECT_EQ((*a)[0], 73);
  EXPECT_EQ((*a)[1], 73);
  // u_ratio = 1 -> aspect 4/3, u_area = 1 -> target = 10000:
  // w = round(sqrt(13333.3)) = 115 > 100 -> rejected.
  EXPECT_FALSE(rrc_try(100, 100, 1.0, 1.0));
  // W=200,H=50, u_area = 0 -> target 800; u_ratio = 0 -> aspect 3/4:
  // w = round(sqrt(600)) = round(24.49) = 24, h = round(sqrt(1066.67)) = 33.
  auto b = rrc_try(200, 50, 0.0, 0.0);
  ASSERT_TRUE(b);
  EXPECT_EQ((*b)[0], 24);
  EXPECT_EQ((*b)[1], 33);
  // Half-to-even: sqrt(target) = 2.5 exactly -> 2 (Python round).
  RrcParams p;
  p.scale_lo = p.scale_hi = 6.25 / 100.0;
  p.ratio_lo = p.ratio_hi = 1.0;
  auto c = rrc_try(10, 10, 0.3, 0.7, p);
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)[0], 2);
}

TEST(Transforms, RrcFallbackCentralCrop) {
  // W/H = 0.5 < 3/4: w = 100, h = round(100 / 0.75) = 133, top = (200-133)//2 = 33.
  EXPECT_EQ(rrc_fallback(100, 200), (CropBox{33, 0, 133, 100}));
  // W/H = 3 > 4/3: h = 50, w = round(50 * 4/3) = 67, left = (150-67)//2 = 41.
  EXPECT_EQ(rrc_fallback(150, 50), (CropBox{0, 41, 50, 67}));
  EXPECT_EQ(rrc_fallback(120, 100), (CropBox{0, 0, 100, 120}));
  // A 1x50 strip never fits a try (w >= round(sqrt(0.08*50*0.75)) = 2), so
  // the fallback gives w = 1, h = round(1/0.75) = 1, top = 49//2 = 24.
  Philox rng(1, 2);
  for (int i = 0; i < 200; ++i) {
    const CropBox b = rrc_box(1, 50, rng);
    EXPECT_GE(b.top, 0);
    EXPECT_LE(b.top + b.height, 50);
    EXPECT_EQ(b, (CropBox{24, 0, 1, 1}));
  }
}

TEST(Transforms, RrcBoxDistribution) {
  // Every box lies inside the image, and the mean area fraction agrees with
  // an independent double-precision Monte Carlo of the recipe's procedure.
  Philox rng(7, 9);
  double area = 0;
  const int n = 4000;
  for (int i = 0; i < n; ++i) {
    const CropBox b = rrc_box(400, 300, rng);
    ASSERT_GE(b.top, 0);
    ASSERT_GE(b.left, 0);
    ASSERT_LE(b.top + b.height, 300);
    ASSERT_LE(b.left + b.width, 400);
    area += double(b.width) * b.height / (400.0 * 300.0);
  }
  // Independent estimate by rejection sampling of the same formula in double.
  std::mt19937_64 g(3);
  std::uniform_real_distribution<double> U(0, 1);
  double ref = 0;
  for (int i = 0; i < 200000; ++i) {
    double a = 0;
    bool ok = false;
    for (int t = 0; t < 10 && !ok; ++t) {
      const double s = 0.08 + 0.92 * U(g), r = std::exp(std::log(0.75) + U(g) * std::log(16.0 / 9.0));
      const double w = std::nearbyint(std::sqrt(s * 120000 * r)), h = std::nearbyint(std::sqrt(s * 120000 / r));
      if (w <= 400 && h <= 300) {
        a = w * h / 120000.0;
        ok = true;
      }
    }
    ref += ok ? a : 1.0;
  }
  EXPECT_NEAR(area / n, ref / 200000, 0.015);
}

TEST(Transforms, EvalGeometry) {
  // 500x375: short side 375 -> 256, long = int(256*500/375) = int(341.33) = 341;
  // left = round((341-224)/2) = round(58.5) = 58 (half to even), top = 16.
  EvalGeometry g = eval_geometry(500, 375);
  EXPECT_EQ(g.resized_w, 341);
  EXPECT_EQ(g.resized_h, 256);
  EXPECT_EQ(g.crop.left, 58);
  EXPECT_EQ(g.crop.top, 16);
  g = eval_geometry(300, 451);  // portrait: 256 x int(256*451/300) = 384; top = round(80) = 80
  EXPECT_EQ(g.resized_w, 256);
  EXPECT_EQ(g.resized_h, 384);
  EXPECT_EQ(g.crop.top, 80);
  EXPECT_EQ(g.crop.left, 16);
}

TEST(Transforms, AdmCenterCropSizesAndFlatColour) {
  // 600x400, S=128: 400 >= 256 -> box-halve to 300x200; 200 < 256 stop;
  // scale 0.64 -> 192x128; crop left (192-128)//2 = 32.
  cv::Mat flat(400, 600, CV_8UC3, cv::Scalar(10, 200, 77));
  cv::Mat out = adm_center_crop(flat, 128);
  ASSERT_EQ(out.cols, 128);
  ASSERT_EQ(out.rows, 128);
  EXPECT_EQ(out.at<cv::Vec3b>(5, 100), cv::Vec3b(10, 200, 77));
  // A column ramp: the output centre column maps back to source x = 300
  // (centre of the crop), so its value is near the ramp there.
  cv::Mat ramp(400, 600, CV_8UC3);
  for (int y = 0; y < 400; ++y)
    for (int x = 0; x < 600; ++x) ramp.at<cv::Vec3b>(y, x) = cv::Vec3b(x * 255 / 599, 0, 0);
  out = adm_center_crop(ramp, 128);
  EXPECT_NEAR(out.at<cv::Vec3b>(64, 64)[0], 300 * 255 / 599, 2);
  EXPECT_NEAR(out.at<cv::Vec3b>(64, 0)[0], (300 - 64 / 0.32) * 255 / 599, 3);
}

TEST(Transforms, FlipAndNormalize) {
  cv::Mat m = testutil::synthetic_rgb(5, 3, 1), f = m.clone();
  hflip_inplace(f);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x) EXPECT_EQ(f.at<cv::Vec3b>(y, x), m.at<cv::Vec3b>(y, 4 - x));
  std::vector<float> out(3 * 15);
  const std::array<float, 3> mean{0.485f, 0.456f, 0.406f}, sd{0.229f, 0.224f, 0.225f};
  to_chw_normalized(m, mean, sd, out.data());
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 3; ++y)
      for (int x = 0; x < 5; ++x) {
        const double want = (m.at<cv::Vec3b>(y, x)[c] / 255.0 - mean[c]) / sd[c];
        EXPECT_NEAR(out[(c * 3 + y) * 5 + x], want, 1e-5);
      }
}

TEST(Transforms, RandomErasingBoxAndNoise) {
  const int C = 3, H = 40, W = 30;
  ErasingParams p;
  p.probability = 1.0;
  int erased = 0;
  double sum = 0, sq = 0;
  int64_t cnt = 0;
  for (int k = 0; k < 200; ++k) {
    std::vector<float> img(C * H * W, 7.0f);
    Philox rng(5, k);
    const CropBox b = random_erasing(img.data(), C, H, W, rng, p);
    if (b.height == 0) continue;
    ++erased;
    ASSERT_LT(b.height, H);
    ASSERT_LT(b.width, W);
    const double frac = double(b.height) * b.width / (H * W);
    EXPECT_GE(frac, 0.02 * 0.5);  // rounding can shrink tiny boxes a little
    EXPECT_LE(frac, 1.0 / 3.0 * 1.5);
    for (int c = 0; c < C; ++c)
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x) {
          const float v = img[(c * H + y) * W + x];
          const bool in = y >= b.top && y < b.top + b.height && x >= b.left && x < b.left + b.width;
          if (!in) {
            ASSERT_EQ(v, 7.0f);
          } else {
            sum += v;
            sq += double(v) * v;
            ++cnt;
          }
        }
  }
  EXPECT_GT(erased, 190);
  EXPECT_NEAR(sum / cnt, 0.0, 0.02);
  EXPECT_NEAR(sq / cnt, 1.0, 0.03);
  // Default probability 0.25.
  int hits = 0;
  for (int k = 0; k < 4000; ++k) {
    std::vector<float> img(C * 8 * 8, 0.0f);
    Philox rng(6, k);
    hits += random_erasing(img.data(), C, 8, 8, rng).height > 0;
  }
  EXPECT_NEAR(hits / 4000.0, 0.25, 0.03);
}

TEST(Transforms, RandAugmentDeterministicAndVaried) {
  const cv::Mat img = testutil::synthetic_rgb(24, 20, 2);
  Philox a(1, 42), b(1, 42);
  EXPECT_EQ(testutil::max_abs_diff(rand_augment(img, a), rand_augment(img, b)), 0);
  // With two ops each skipped with p 0.5, P(no op applied) = 1/4.
  int unchanged = 0;
  const int n = 800;
  for (int k = 0; k < n; ++k) {
    Philox r(2, k);
    unchanged += testutil::max_abs_diff(rand_augment(img, r), img) == 0;
  }
  // Some applied ops can be identities on this image (rare); allow slack.
  EXPECT_NEAR(unchanged / double(n), 0.25, 0.05);
}

}  // namespace
}  // namespace vt
