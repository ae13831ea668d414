// groupnorm_forward (with and without the fused SiLU, with and without the
// affine parameters) against a double-precision GroupNorm written from its
// definition; upsample_nearest2x against index arithmetic.
#include <gtest/gtest.h>

#include <cmath>

#include "eval_ops_util.h"
#include "kernels/groupnorm.h"
#include "kernels/upsample.h"

namespace vt {
namespace {

std::vector<double> naive_groupnorm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, double eps,
                                    bool silu) {
  const int64_t n = x.size(0), c = x.size(1), s = x.numel() / (n * c), cg = c / groups;
  std::vector<double> y(static_cast<size_t>(x.numel()));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      const float* base = x.f32() + (i * c + g * cg) * s;
      double mean = 0, var = 0;
      for (int64_t k = 0; k < cg * s; ++k) mean += base[k];
      mean /= static_cast<double>(cg * s);
      for (int64_t k = 0; k < cg * s; ++k) var += (base[k] - mean) * (base[k] - mean);
      var /= static_cast<double>(cg * s);
      for (int64_t ch = g * cg; ch < (g + 1) * cg; ++ch)
        for (int64_t k = 0; k < s; ++k) {
          const int64_t at = (i * c + ch) * s + k;
          double v = (x.f32()[at] - mean) / std::sqrt(var + eps);
          if (w.defined()) v *= w.f32()[ch];
          if (b.defined()) v += b.f32()[ch];
          if (silu) v = v / (1.0 + std::exp(-v));
          y[static_cast<size_t>(at)] = v;
        }
    }
  return y;
}

struct GnCase {
  Shape shape;
  int64_t groups;
  float eps;
  bool affine, silu;
};

class GroupNormCases : public ::testing::TestWithParam<GnCase> {};

TEST_P(GroupNormCases, MatchesNaiveDouble) {
  const GnCase k = GetParam();
  // An offset input: statistics must not lose precision to a large mean.
  Tensor x = evaltest::uniform(k.shape, 11, 2.f, 5.f);
  Tensor w = k.affine ? evaltest::uniform({k.shape[1]}, 12, 0.5f, 1.5f) : Tensor();
  Tensor b = k.affine ? evaltest::uniform({k.shape[1]}, 13) : Tensor();
  Tensor y = Tensor::empty(k.shape);
  groupnorm_forward(x, k.groups, w, b, k.eps, y, k.silu);
  // 5e-6: the statistics' float partial sums are vectorised in the normal
  // build, not under the sanitizers, whose instrumentation keeps the loops
  // scalar (one 512-long float sum per group: errors up to 4.6e-6 seen).
  evaltest::expect_near_all(naive_groupnorm(x, k.groups, w, b, k.eps, k.silu), y, 5e-6, 5e-6, "groupnorm");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, GroupNormCases,
    ::testing::Values(GnCase{{2, 32, 5, 7}, 8, 1e-6f, true, true},     // VAE: norm + SiLU
                      GnCase{{2, 32, 5, 7}, 8, 1e-6f, true, false},    // VAE attention norm
                      GnCase{{1, 12, 4, 4}, 12, 1e-5f, false, false},  // one channel per group
                      GnCase{{3, 6, 9}, 1, 1e-1f, true, true},         // 3-d, one group (LayerNorm-like), big eps
                      GnCase{{1, 64, 16, 16}, 32, 1e-6f, true, true}));

TEST(GroupNorm, InPlace) {
  Tensor x = evaltest::uniform({2, 8, 3, 3}, 14);
  Tensor w = evaltest::uniform({8}, 15), b = evaltest::uniform({8}, 16);
  const std::vector<double> want = naive_groupnorm(x, 4, w, b, 1e-6, true);
  groupnorm_forward(x, 4, w, b, 1e-6f, x, true);
  evaltest::expect_near_all(want, x, 2e-6, 2e-6, "in place");
}

TEST(GroupNorm, RejectsGroupsNotDividingChannels) {
  Tensor x = Tensor::zeros({1, 6, 2, 2});
  try {
    groupnorm_forward(x, 4, Tensor(), Tensor(), 1e-6f, x);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("num_groups 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(groupnorm_forward(x, 3, Tensor::zeros({5}), Tensor(), 1e-6f, x), std::invalid_argument);
  EXPECT_THROW(groupnorm_forward(x, 3, Tensor(), Tensor(), 1e-6f, Tensor::zeros({1, 6, 2, 3})),
               std::invalid_argument);
}

TEST(UpsampleNearest2x, CopiesEachPixelToA2x2Block) {
  Tensor x = evaltest::uniform({2, 3, 5, 7}, 17);
  Tensor y = Tensor::empty({2, 3, 10, 14});
  upsample_nearest2x(x, y);
  std::vector<double> want(static_cast<size_t>(y.numel()));
  for (int64_t p = 0; p < 6; ++p)
    for (int64_t i = 0; i < 10; ++i)
      for (int64_t j = 0; j < 14; ++j) want[static_cast<size_t>((p * 10 + i) * 14 + j)] = x.f32()[(p * 5 + i / 2) * 7 + j / 2];
  evaltest::expect_near_all(want, y, 0.0, 0.0, "upsample");
  EXPECT_THROW(upsample_nearest2x(x, Tensor::empty({2, 3, 10, 13})), std::invalid_argument);
}

}  // namespace
}  // namespace vt
