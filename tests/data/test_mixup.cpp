#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "data_pipeline/mixup.h"

namespace vt {
namespace {

TEST(Mixup, CutmixBoxAtBorderAndCorrectedLambda) {
  // H = W = 10, lam = 0.75: r = 0.5, cut = 5, half = 2. Centre (0, 9):
  // y in [clip(-2), clip(2)) = [0, 2), x in [7, clip(11)=10): area 2*3 = 6,
  // corrected lambda = 1 - 6/100 = 0.94.
  const CutmixBox b = cutmix_box(10, 10, 0.75, 0, 9);
  EXPECT_EQ(b.y0, 0);
  EXPECT_EQ(b.y1, 2);
  EXPECT_EQ(b.x0, 7);
  EXPECT_EQ(b.x1, 10);
  EXPECT_DOUBLE_EQ(cutmix_lambda(b, 10, 10), 0.94);
  // Interior: H = 8, W = 12, lam = 0.36 -> r = 0.8, cut_h = 6, cut_w = 9
  // (half 3 and 4); centre (4, 6): y [1, 7), x [2, 10): lam = 1 - 48/96 = 0.5.
  const CutmixBox c = cutmix_box(8, 12, 0.36, 4, 6);
  EXPECT_EQ(c.y0, 1);
  EXPECT_EQ(c.y1, 7);
  EXPECT_EQ(c.x0, 2);
  EXPECT_EQ(c.x1, 10);
  EXPECT_DOUBLE_EQ(cutmix_lambda(c, 8, 12), 0.5);
}

TEST(Mixup, SoftTargetsClosedForm) {
  // K = 4, s = 0.1: off = 0.025, on = 0.925. labels (0, 1, 2, 3), lam 0.7:
  // t_0 = 0.7 e0 (on) + 0.3 e3 (on) = [0.655, 0.025, 0.025, 0.295].
  const int32_t labels[4] = {0, 1, 2, 3};
  std::vector<float> t(16);
  mixup_targets(labels, 4, 4, 0.7, 0.1, t.data());
  const double want0[4] = {0.7 * 0.925 + 0.3 * 0.025, 0.025, 0.025, 0.7 * 0.025 + 0.3 * 0.925};
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(t[k], want0[k], 1e-7);
  const double want1[4] = {0.025, 0.655, 0.295, 0.025};  // sample 1 pairs with sample 2
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(t[4 + k], want1[k], 1e-7);
  for (int i = 0; i < 4; ++i) {
    double s = 0;
    for (int k = 0; k < 4; ++k) s += t[i * 4 + k];
    EXPECT_NEAR(s, 1.0, 1e-6);
  }
  // Same labels in a pair: on everywhere it is hot.
  const int32_t same[2] = {1, 1};
  mixup_targets(same, 2, 4, 0.3, 0.1, t.data());
  EXPECT_NEAR(t[1], 0.925, 1e-7);
  EXPECT_NEAR(t[0], 0.025, 1e-7);
}

TEST(Mixup, BatchOpMatchesDefinition) {
  const int B = 4, C = 2, H = 6, W = 5, K = 3;
  const int32_t labels[B] = {0, 2, 1, 2};
  MixupParams p;
  p.num_classes = K;
  int seen_cutmix = 0, seen_mixup = 0;
  double lam_sum_mix = 0;
  for (int k = 0; k < 400; ++k) {
    std::vector<float> x(B * C * H * W);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(std::sin(0.37 * i + k));
    const std::vector<float> orig = x;
    std::vector<float> t(B * K);
    Philox rng(11, k);
    const MixupDecision d = mixup_batch(x.data(), B, C, H, W, labels, t.data(), rng, p);
    ASSERT_TRUE(d.applied);
    for (int i = 0; i < B; ++i)
      for (int c = 0; c < C; ++c)
        for (int y = 0; y < H; ++y)
          for (int xx = 0; xx < W; ++xx) {
            const size_t a = ((size_t(i) * C + c) * H + y) * W + xx, m = ((size_t(B - 1 - i) * C + c) * H + y) * W + xx;
            double want;
            if (d.cutmix) {
              const bool in = y >= d.box.y0 && y < d.box.y1 && xx >= d.box.x0 && xx < d.box.x1;
              want = in ? orig[m] : orig[a];
            } else {
              want = d.lambda * orig[a] + (1 - d.lambda) * orig[m];
            }
            ASSERT_NEAR(x[a], want, 1e-6);
          }
    if (d.cutmix) {
      ++seen_cutmix;
      EXPECT_DOUBLE_EQ(d.lambda, cutmix_lambda(d.box, H, W));
    } else {
      ++seen_mixup;
      lam_sum_mix += d.lambda;
    }
    std::vector<float> want(B * K);
    mixup_targets(labels, B, K, d.lambda, 0.1, want.data());
    for (int i = 0; i < B * K; ++i) ASSERT_EQ(t[i], want[i]);
  }
  EXPECT_NEAR(seen_cutmix / 400.0, 0.5, 0.08);
  EXPECT_NEAR(lam_sum_mix / seen_mixup, 0.5, 0.05);  // Beta(0.8, 0.8) has mean 1/2
  std::vector<float> x(3 * C * H * W), t(3 * K);
  Philox rng(1, 1);
  EXPECT_THROW(mixup_batch(x.data(), 3, C, H, W, labels, t.data(), rng, p), std::invalid_argument);
}

}  // namespace
}  // namespace vt
