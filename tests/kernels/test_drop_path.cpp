// Drop-path: reproducible masks from (seed, stream), the kept fraction, the
// 1/keep_prob scaling, rate 0 as identity, and forward/backward vs loops.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "kernels/drop_path.h"

namespace vt {
namespace {

std::vector<float> scales_of(float rate, uint64_t seed, uint64_t stream, int64_t B, int64_t offset = 0) {
  Tensor s = Tensor::empty({B});
  drop_path_scales(rate, seed, stream, s, offset);
  return s.to_vector();
}

TEST(DropPath, SameKeySameMaskOtherKeyOtherMask) {
  const uint64_t st = philox_stream(10, 3, 1);
  EXPECT_EQ(scales_of(0.5f, 7, st, 64), scales_of(0.5f, 7, st, 64));
  EXPECT_NE(scales_of(0.5f, 7, st, 64), scales_of(0.5f, 7, philox_stream(11, 3, 1), 64));
  EXPECT_NE(scales_of(0.5f, 7, st, 64), scales_of(0.5f, 8, st, 64));
}

TEST(DropPath, SampleOffsetSelectsTheGlobalSamples) {
  // A data-parallel rank holding samples [5, 15) sees the same mask entries
  // as one process holding the whole batch.
  std::vector<float> all = scales_of(0.4f, 3, 9, 20);
  std::vector<float> part = scales_of(0.4f, 3, 9, 10, 5);
  EXPECT_EQ(part, std::vector<float>(all.begin() + 5, all.begin() + 15));
}

TEST(DropPath, SampleStrideSelectsTheInterleavedGlobalSamples) {
  // DistributedSampler interleave: rank r of 3 holds global rows r, r + 3, ...
  const std::vector<float> all = scales_of(0.5f, 4, 11, 30);
  for (int64_t r = 0; r < 3; ++r) {
    Tensor s = Tensor::empty({10});
    drop_path_scales(0.5f, 4, 11, s, r, 3);
    const std::vector<float> part = s.to_vector();
    for (int64_t j = 0; j < 10; ++j) EXPECT_EQ(part[j], all[j * 3 + r]) << "rank " << r << " row " << j;
  }
}

TEST(DropPath, KeptFractionAndScale) {
  const float rate = 0.3f;
  const int64_t n = 20000;
  std::vector<float> s = scales_of(rate, 1, 2, n);
  int64_t kept = 0;
  for (float v : s) {
    if (v != 0.0f) {
      ++kept;
      ASSERT_FLOAT_EQ(v, 1.0f / 0.7f);
    }
  }
  const double frac = static_cast<double>(kept) / n, sigma = std::sqrt(0.7 * 0.3 / n);
  EXPECT_NEAR(frac, 0.7, 4 * sigma);
}

TEST(DropPath, RateZeroIsIdentity) {
  std::vector<float> s = scales_of(0.0f, 1, 2, 8);
  for (float v : s) EXPECT_EQ(v, 1.0f);
  Philox rng(5, 5);
  std::vector<float> xv(8 * 6);
  for (auto& v : xv) v = static_cast<float>(rng.normal());
  Tensor x = Tensor::from_vector(xv, {8, 2, 3}), out = Tensor::empty({8, 2, 3});
  drop_path_forward(x, Tensor::from_vector(s, {8}), out);
  EXPECT_EQ(out.to_vector(), xv);
}

TEST(DropPath, ForwardBackwardAndResidualAdd) {
  const int64_t B = 6, T = 3, D = 4, n = T * D;
  std::vector<float> s = scales_of(0.5f, 11, 12, B);
  Philox rng(6, 6);
  std::vector<float> xv(B * n), gv(B * n), rv(B * n);
  for (auto& v : xv) v = static_cast<float>(rng.normal());
  for (auto& v : gv) v = static_cast<float>(rng.normal());
  for (auto& v : rv) v = static_cast<float>(rng.normal());
  Tensor sc = Tensor::from_vector(s, {B});
  Tensor x = Tensor::from_vector(xv, {B, T, D}), out = Tensor::empty({B, T, D});
  drop_path_forward(x, sc, out);
  Tensor dx = Tensor::full({B, T, D}, 9.0f);
  drop_path_backward(Tensor::from_vector(gv, {B, T, D}), sc, dx);
  Tensor res = Tensor::from_vector(rv, {B, T, D});
  drop_path_add(x, sc, res);
  // Reference: timm's x / keep_prob * mask, with the mask read from the scales.
  for (int64_t b = 0; b < B; ++b) {
    const double m = s[b] != 0.0f ? 1.0 : 0.0;
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(b * n + i);
      ASSERT_NEAR(out.f32()[k], xv[k] / 0.5 * m, 1e-6);
      ASSERT_NEAR(dx.f32()[k], gv[k] / 0.5 * m, 1e-6);  // d(out)/dx is the same per-sample scale
      ASSERT_NEAR(res.f32()[k], rv[k] + xv[k] / 0.5 * m, 1e-6);
    }
  }
}

TEST(DropPath, RejectsBadArguments) {
  Tensor s = Tensor::empty({4});
  EXPECT_THROW(drop_path_scales(1.0f, 1, 1, s), std::invalid_argument);
  EXPECT_THROW(drop_path_scales(-0.1f, 1, 1, s), std::invalid_argument);
  EXPECT_THROW(drop_path_scales(0.1f, 1, 1, s, 0, 0), std::invalid_argument);
  EXPECT_THROW(drop_path_forward(Tensor::zeros({3, 2}), s, Tensor::empty({3, 2})), std::invalid_argument);
}

}  // namespace
}  // namespace vt
