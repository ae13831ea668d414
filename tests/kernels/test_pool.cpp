// Max / average pooling (with and without padding in the divisor) and the
// global average pool against naive double references.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "eval_ops_util.h"
#include "kernels/pool.h"

namespace vt {
namespace {

std::vector<double> naive_pool(const Tensor& x, const Pool2dParams& p, const Shape& out) {
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3), OH = out[2], OW = out[3];
  const Tensor xc = x.contiguous();
  std::vector<double> y;
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t inside = 0;
        for (int a = 0; a < p.kernel_h; ++a)
          for (int b = 0; b < p.kernel_w; ++b) {
            const int64_t hi = i * p.stride_h - p.pad_h + a, wi = j * p.stride_w - p.pad_w + b;
            if (hi < 0 || hi >= H || wi < 0 || wi >= W) continue;
            const double v = xc.f32()[(nc * H + hi) * W + wi];
            best = std::max(best, v), sum += v, ++inside;
          }
        if (p.kind == PoolKind::Max) y.push_back(best);
        else if (p.kind == PoolKind::AvgExcludePad) y.push_back(sum / inside);
        else y.push_back(sum / (p.kernel_h * p.kernel_w));
      }
  return y;
}

Pool2dParams P(PoolKind kind, int k, int s, int pad) {
  Pool2dParams p;
  p.kind = kind, p.kernel_h = p.kernel_w = k, p.stride_h = p.stride_w = s, p.pad_h = p.pad_w = pad;
  return p;
}

TEST(Pool2d, MatchesNaiveDouble) {
  Tensor x = evaltest::uniform({2, 3, 11, 9}, 7);
  for (PoolKind kind : {PoolKind::Max, PoolKind::AvgIncludePad, PoolKind::AvgExcludePad})
    for (auto [k, s, pad] : {std::tuple<int, int, int>{3, 2, 0}, {3, 1, 1}, {2, 2, 1}, {3, 3, 1}}) {
      Pool2dParams p = P(kind, k, s, pad);
      Shape out = pool2d_output_shape(x.shape(), p);
      Tensor y = Tensor::empty(out);
      pool2d_forward(x, y, p);
      const std::string what = "kind " + std::to_string(static_cast<int>(kind)) + " k" + std::to_string(k) + " s" +
                               std::to_string(s) + " p" + std::to_string(pad);
      evaltest::expect_near_all(naive_pool(x, p, out), y, 1e-6, 1e-6, what.c_str());
    }
}

TEST(Pool2d, ExcludePadDiffersFromIncludePadOnlyAtBorder) {
  // A constant image: excluding padding keeps the constant everywhere, while
  // including it shrinks corners to 4/9 and edges to 6/9 (closed form).
  Tensor x = Tensor::full({1, 1, 5, 5}, 3.f);
  Tensor y_ex = Tensor::empty({1, 1, 5, 5}), y_in = Tensor::empty({1, 1, 5, 5});
  pool2d_forward(x, y_ex, P(PoolKind::AvgExcludePad, 3, 1, 1));
  pool2d_forward(x, y_in, P(PoolKind::AvgIncludePad, 3, 1, 1));
  for (float v : y_ex.to_vector()) EXPECT_FLOAT_EQ(v, 3.f);
  EXPECT_FLOAT_EQ(y_in.f32()[0], 3.f * 4 / 9);
  EXPECT_FLOAT_EQ(y_in.f32()[2], 3.f * 6 / 9);
  EXPECT_FLOAT_EQ(y_in.f32()[12], 3.f);
}

TEST(Pool2d, MaxIgnoresPaddingForNegativeInputs) {
  Tensor x = Tensor::full({1, 2, 4, 4}, -5.f);
  Tensor y = Tensor::empty({1, 2, 4, 4});
  pool2d_forward(x, y, P(PoolKind::Max, 3, 1, 1));
  for (float v : y.to_vector()) EXPECT_EQ(v, -5.f);
}

TEST(Pool2d, WritesIntoChannelSlice) {
  Tensor x = evaltest::uniform({2, 3, 6, 6}, 8);
  Tensor cat = Tensor::full({2, 5, 6, 6}, 7.f);
  Tensor y = cat.slice(1, 1, 4);
  Pool2dParams p = P(PoolKind::AvgExcludePad, 3, 1, 1);
  pool2d_forward(x, y, p);
  evaltest::expect_near_all(naive_pool(x, p, y.shape()), y, 1e-6, 1e-6, "slice");
  for (float v : cat.select(1, 0).contiguous().to_vector()) ASSERT_EQ(v, 7.f);
  for (float v : cat.select(1, 4).contiguous().to_vector()) ASSERT_EQ(v, 7.f);
}

TEST(Pool2d, GlobalAverage) {
  Tensor x = evaltest::uniform({2, 3, 5, 7}, 9);
  Tensor y = Tensor::empty({2, 3});
  global_avg_pool2d(x, y);
  std::vector<double> want;
  for (int64_t r = 0; r < 6; ++r) {
    double s = 0;
    for (int64_t i = 0; i < 35; ++i) s += x.f32()[r * 35 + i];
    want.push_back(s / 35);
  }
  evaltest::expect_near_all(want, y, 1e-7, 1e-6, "gap");
  EXPECT_THROW(global_avg_pool2d(x, Tensor::empty({2, 4})), std::invalid_argument);
}

TEST(Pool2d, RejectsBadParams) {
  Tensor x = Tensor::zeros({1, 1, 4, 4});
  EXPECT_THROW(pool2d_output_shape(x.shape(), P(PoolKind::Max, 3, 1, 2)), std::invalid_argument);  // pad > k/2
  EXPECT_THROW(pool2d_output_shape(x.shape(), P(PoolKind::Max, 7, 1, 0)), std::invalid_argument);  // too small
  EXPECT_THROW(pool2d_forward(x, Tensor::zeros({1, 1, 3, 3}), P(PoolKind::Max, 3, 1, 1)), std::invalid_argument);
}

}  // namespace
}  // namespace vt
