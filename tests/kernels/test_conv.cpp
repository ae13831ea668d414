// conv2d_forward against a naive double-precision direct convolution, over
// strides, paddings, dilations, groups, asymmetric kernels, fused ReLU and
// strided (channel-slice) inputs/outputs.
#include <gtest/gtest.h>

#include <algorithm>

#include "eval_ops_util.h"
#include "kernels/conv.h"
#include "naive_conv.h"

namespace vt {
namespace {

using convtest::naive_conv;

struct Case {
  int64_t n, c, h, w, o, kh, kw;
  Conv2dParams p;
  bool bias;
};

class ConvCases : public ::testing::TestWithParam<Case> {};

TEST_P(ConvCases, MatchesNaiveDouble) {
  const Case k = GetParam();
  Tensor x = evaltest::uniform({k.n, k.c, k.h, k.w}, 1);
  Tensor w = evaltest::uniform({k.o, k.c / k.p.groups, k.kh, k.kw}, 2, -0.5f, 0.5f);
  Tensor b = k.bias ? evaltest::uniform({k.o}, 3) : Tensor();
  const Shape out = conv2d_output_shape(x.shape(), w.shape(), k.p);
  Tensor y = Tensor::empty(out);
  conv2d_forward(x, w, b, y, k.p);
  evaltest::expect_near_all(naive_conv(x, w, b, k.p, out), y, 1e-5, 1e-5, "conv2d");
}

Conv2dParams P(int sh, int sw, int ph, int pw, int dh = 1, int dw = 1, int g = 1, bool relu = false) {
  Conv2dParams p;
  p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw, p.dilation_h = dh, p.dilation_w = dw;
  p.groups = g, p.relu = relu;
  return p;
}

// diffusers' Downsample2D: F.pad(x, (0, 1, 0, 1)) then a 3x3 stride-2 conv
// without padding, i.e. bottom/right padding only.
Conv2dParams Asym(int sh, int ph_end, int pw_end) {
  Conv2dParams p = P(sh, sh, 0, 0);
  p.pad_h_end = ph_end, p.pad_w_end = pw_end;
  return p;
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvCases,
    ::testing::Values(Case{2, 3, 13, 11, 4, 3, 3, P(2, 2, 0, 0), false},        // Inception stem: 3x3/2 valid
                      Case{1, 5, 9, 10, 6, 1, 1, P(1, 1, 0, 0), true},          // 1x1
                      Case{2, 4, 8, 7, 3, 1, 7, P(1, 1, 0, 3), true},           // 1x7, pad (0, 3)
                      Case{1, 4, 7, 8, 5, 7, 1, P(1, 1, 3, 0, 1, 1, 1, true), true},  // 7x1 + ReLU
                      Case{1, 3, 12, 12, 4, 3, 3, P(2, 1, 1, 2, 2, 1), true},   // dilation, uneven stride
                      Case{2, 4, 6, 6, 6, 3, 3, P(1, 1, 1, 1, 1, 1, 2), true},  // groups
                      Case{1, 2, 10, 9, 3, 5, 5, P(3, 3, 2, 2), false},         // stride not dividing
                      Case{2, 5, 8, 8, 6, 3, 3, Asym(2, 1, 1), true},           // VAE downsample: pad (0,1,0,1)
                      Case{1, 3, 9, 6, 4, 3, 3, Asym(2, 2, 0), true}));         // odd size, bottom-only pad

TEST(Conv2d, WritesIntoChannelSliceOfConcatBuffer) {
  // A branch output written into channels [2, 5) of a [N, 7, H, W] buffer,
  // reading its input from a channel slice too: neighbours stay untouched.
  Tensor big_in = evaltest::uniform({2, 6, 8, 8}, 4);
  Tensor x = big_in.slice(1, 1, 4);
  Tensor w = evaltest::uniform({3, 3, 3, 3}, 5);
  Tensor b = evaltest::uniform({3}, 6);
  Conv2dParams p = P(1, 1, 1, 1, 1, 1, 1, true);
  Tensor cat = Tensor::full({2, 7, 8, 8}, 42.f);
  Tensor y = cat.slice(1, 2, 5);
  conv2d_forward(x, w, b, y, p);
  evaltest::expect_near_all(naive_conv(x, w, b, p, y.shape()), y, 1e-5, 1e-5, "slice");
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c : {0, 1, 5, 6}) {
      std::vector<float> v = cat.select(0, n).select(0, c).contiguous().to_vector();
      for (float f : v) ASSERT_EQ(f, 42.f) << "channel " << c << " was overwritten";
    }
}

TEST(Conv2d, WinogradMatchesNaiveDouble) {
  // 64 input channels: oneDNN's Winograd kernel where the CPU has one (the
  // direct kernel elsewhere); both within fp32 rounding of the reference.
  Tensor x = evaltest::uniform({2, 64, 11, 10}, 7);
  Tensor w = evaltest::uniform({32, 64, 3, 3}, 8, -0.1f, 0.1f);
  Tensor b = evaltest::uniform({32}, 9);
  Conv2dParams p = P(1, 1, 1, 1);
  p.cpu_winograd = true;
  Tensor y = Tensor::empty(conv2d_output_shape(x.shape(), w.shape(), p));
  conv2d_forward(x, w, b, y, p);
  evaltest::expect_near_all(naive_conv(x, w, b, p, y.shape()), y, 1e-5, 1e-5, "winograd");
}

TEST(Conv2d, FrozenWeightsFollowTheirStorage) {
  // The reordered copy is per weight tensor: two live weights of one shape
  // each get their own, and a weight freed and replaced (possibly at the
  // same address) is not served from the old copy.
  Tensor x = evaltest::uniform({1, 64, 9, 9}, 10);
  Conv2dParams p = P(1, 1, 1, 1);
  p.frozen_weights = true;
  for (bool winograd : {false, true}) {
    p.cpu_winograd = winograd;
    Tensor keep = evaltest::uniform({16, 64, 3, 3}, 11, -0.1f, 0.1f);
    for (uint64_t seed = 12; seed < 15; ++seed) {
      Tensor w = evaltest::uniform({16, 64, 3, 3}, seed, -0.1f, 0.1f);
      for (const Tensor* wt : {&keep, &w}) {
        Tensor y = Tensor::empty(conv2d_output_shape(x.shape(), wt->shape(), p));
        conv2d_forward(x, *wt, Tensor(), y, p);
        evaltest::expect_near_all(naive_conv(x, *wt, Tensor(), p, y.shape()), y, 1e-5, 1e-5, "frozen");
      }
    }
  }
}

TEST(Conv2d, RejectsBadShapes) {
  Tensor x = Tensor::zeros({1, 3, 8, 8});
  Tensor w = Tensor::zeros({4, 2, 3, 3});
  Tensor y = Tensor::zeros({1, 4, 6, 6});
  EXPECT_THROW(conv2d_forward(x, w, Tensor(), y, Conv2dParams{}), std::invalid_argument);  // channel mismatch
  Tensor w2 = Tensor::zeros({4, 3, 3, 3});
  Tensor y_bad = Tensor::zeros({1, 4, 5, 6});
  try {
    conv2d_forward(x, w2, Tensor(), y_bad, Conv2dParams{});
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[1, 4, 6, 6]"), std::string::npos) << e.what();
  }
  Tensor tiny = Tensor::zeros({1, 3, 2, 2});
  EXPECT_THROW(conv2d_output_shape(tiny.shape(), w2.shape(), Conv2dParams{}), std::invalid_argument);
  EXPECT_THROW(conv2d_forward(x, w2, Tensor::zeros({3}), y, Conv2dParams{}), std::invalid_argument);  // bias
}

}  // namespace
}  // namespace vt
