// Bilinear resize (align_corners=False, no antialias) against a double
// reference of PyTorch's documented formula, plus closed-form properties.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "eval_ops_util.h"
#include "kernels/resize.h"

namespace vt {
namespace {

std::vector<double> naive_resize(const Tensor& x, int64_t oh, int64_t ow) {
  const int64_t P = x.size(0) * x.size(1), H = x.size(2), W = x.size(3);
  auto src = [](int64_t d, int64_t in, int64_t out, int64_t* i0, int64_t* i1, double* l) {
    double s = (d + 0.5) * static_cast<double>(in) / out - 0.5;
    s = std::max(s, 0.0);
    *i0 = std::min<int64_t>(static_cast<int64_t>(std::floor(s)), in - 1);
    *i1 = std::min<int64_t>(*i0 + 1, in - 1);
    *l = s - *i0;
  };
  std::vector<double> y;
  for (int64_t p = 0; p < P; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        int64_t a0, a1, b0, b1;
        double ly, lx;
        src(i, H, oh, &a0, &a1, &ly);
        src(j, W, ow, &b0, &b1, &lx);
        auto at = [&](int64_t r, int64_t c) { return static_cast<double>(x.f32()[(p * H + r) * W + c]); };
        y.push_back((1 - ly) * ((1 - lx) * at(a0, b0) + lx * at(a0, b1)) + ly * ((1 - lx) * at(a1, b0) + lx * at(a1, b1)));
      }
  return y;
}

TEST(ResizeBilinear, MatchesFormulaUpAndDown) {
  Tensor x = evaltest::uniform({2, 3, 7, 10}, 11, 0.f, 1.f);
  for (auto [oh, ow] : {std::pair<int64_t, int64_t>{29, 29}, {4, 3}, {7, 23}, {1, 1}}) {
    Tensor y = Tensor::empty({2, 3, oh, ow});
    resize_bilinear(x, y);
    evaltest::expect_near_all(naive_resize(x, oh, ow), y, 2e-6, 0, ("to " + std::to_string(oh)).c_str());
  }
}

TEST(ResizeBilinear, SameSizeIsIdentity) {
  Tensor x = evaltest::uniform({1, 3, 9, 8}, 12);
  Tensor y = Tensor::empty({1, 3, 9, 8});
  resize_bilinear(x, y);
  EXPECT_EQ(x.to_vector(), y.to_vector());
}

TEST(ResizeBilinear, LinearRampIsReproducedInsideBorder) {
  // Bilinear interpolation reproduces an affine function exactly wherever
  // no tap is clamped: x(c) = c on [0, W) resized 2x gives (j + 0.5)/2 - 0.5.
  const int64_t W = 6;
  Tensor x = Tensor::empty({1, 1, 1, W});
  for (int64_t c = 0; c < W; ++c) x.f32()[c] = static_cast<float>(c);
  Tensor y = Tensor::empty({1, 1, 1, 2 * W});
  resize_bilinear(x, y);
  for (int64_t j = 1; j < 2 * W - 1; ++j) EXPECT_NEAR(y.f32()[j], (j + 0.5) / 2 - 0.5, 1e-6) << j;
  EXPECT_EQ(y.f32()[0], 0.f);               // clamped to the first pixel
  EXPECT_EQ(y.f32()[2 * W - 1], W - 1.f);   // clamped to the last pixel
}

TEST(ResizeBilinear, RejectsMismatchedBatch) {
  EXPECT_THROW(resize_bilinear(Tensor::zeros({1, 3, 4, 4}), Tensor::zeros({1, 1, 8, 8})), std::invalid_argument);
}

}  // namespace
}  // namespace vt
