// The FID Inception's ops on CUDA (kernels/conv.h, pool.h, resize.h) against
// their CPU twins on small odd shapes: groups, stride 2, dilation, asymmetric
// padding, 1x1 and KxK kernels, strided input and channel-slice output
// views, both conv tile sizes (<= 16 and > 16 output channels per group) and
// several K steps. The CPU conv is first checked against a naive double
// loop, so the oracle itself is independent of oneDNN.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_test_util.h"
#include "kernels/conv.h"
#include "kernels/naive_conv.h"
#include "kernels/pool.h"
#include "kernels/resize.h"

namespace vt {
namespace {

using namespace cudatest;

// The naive double convolution (tests/kernels/naive_conv.h), as floats.
std::vector<float> naive_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p,
                              const Shape& out) {
  const std::vector<double> y = convtest::naive_conv(x, w, b, p, out);
  return std::vector<float>(y.begin(), y.end());
}

struct ConvCase {
  const char* name;
  int64_t n, c, h, w, o, kh, kw;
  Conv2dParams p;
  bool bias;
  int64_t x_extra, y_extra;  // channels around the views: x/y are slices of larger buffers
};

Conv2dParams params(int sh, int sw, int ph, int pw, int ph_end, int pw_end, int dh, int dw, int groups, bool relu) {
  Conv2dParams p;
  p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw, p.pad_h_end = ph_end, p.pad_w_end = pw_end;
  p.dilation_h = dh, p.dilation_w = dw, p.groups = groups, p.relu = relu;
  return p;
}

TEST(CudaConv, MatchesCpuTwinOnOddShapes) {
  const ConvCase cases[] = {
      {"3x3 pad 1 bias relu", 2, 5, 9, 11, 7, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 1, true), true, 0, 0},
      {"groups 3, stride 2, asymmetric pad, dilation", 2, 6, 10, 9, 9, 3, 2, params(2, 2, 1, 0, 0, 2, 2, 1, 3, false),
       false, 0, 0},
      {"1x7 pad (0,3), 70 channels (64-tile), slices", 3, 12, 7, 13, 70, 1, 7, params(1, 1, 0, 3, -1, -1, 1, 1, 1, true),
       true, 4, 9},
      {"3x3 stride 2 no pad, K = 360", 1, 40, 15, 17, 24, 3, 3, params(2, 2, 0, 0, -1, -1, 1, 1, 1, true), true, 0, 5},
      {"depthwise 5x5 pad 2", 2, 8, 6, 6, 8, 5, 5, params(1, 1, 2, 2, -1, -1, 1, 1, 8, false), true, 0, 0},
      {"1x1 stride 2 pad 1, 20 channels, slices", 2, 9, 7, 8, 20, 1, 1, params(2, 2, 1, 1, -1, -1, 1, 1, 1, true),
       true, 3, 2},
  };
  uint64_t seed = 10;
  for (const ConvCase& k : cases) {
    SCOPED_TRACE(k.name);
    Tensor xbuf = randn_tensor({k.n, k.c + k.x_extra, k.h, k.w}, seed++);
    Tensor x = xbuf.slice(1, k.x_extra, k.x_extra + k.c);
    Tensor w = randn_tensor({k.o, k.c / k.p.groups, k.kh, k.kw}, seed++);
    Tensor b = k.bias ? randn_tensor({k.o}, seed++) : Tensor();
    const Shape out = conv2d_output_shape(x.shape(), w.shape(), k.p);
    Tensor ybuf = Tensor::full({out[0], out[1] + k.y_extra, out[2], out[3]}, 7.f);
    Tensor y = ybuf.slice(1, k.y_extra, k.y_extra + out[1]);
    conv2d_forward(x, w, b, y, k.p);
    if (k.p.pad_h_end < 0 && k.p.pad_w_end < 0)  // the naive loop knows symmetric padding only
      expect_close(y.contiguous().to_vector(), naive_conv(x, w, b, k.p, out), 1e-5, "CPU vs naive");
    if (!cuda_available()) continue;
    const Device dev = Device::cuda(0);
    Tensor gxbuf = xbuf.to(dev), gw = w.to(dev), gb = k.bias ? b.to(dev) : Tensor();
    Tensor gybuf = Tensor::full(ybuf.shape(), 7.f, dev);
    conv2d_forward(gxbuf.slice(1, k.x_extra, k.x_extra + k.c), gw, gb, gybuf.slice(1, k.y_extra, k.y_extra + out[1]),
                   k.p);
    const Tensor got = gybuf.to(Device::cpu());
    expect_close(got.slice(1, k.y_extra, k.y_extra + out[1]).contiguous().to_vector(), y.contiguous().to_vector(),
                 1e-5, "CUDA vs CPU");
    if (k.y_extra > 0) {  // channels outside the slice untouched
      for (float v : got.slice(1, 0, k.y_extra).contiguous().to_vector()) ASSERT_EQ(v, 7.f);
    }
  }
  VT_SKIP_WITHOUT_GPU();
}

TEST(CudaConv, AsymmetricPaddingMatchesExplicitZeroPadding) {
  // pad (top 0, left 0, bottom 1, right 1) == symmetric-free conv of the input
  // padded by hand: an oracle for the CPU twin's asymmetric case.
  const Tensor x = randn_tensor({1, 3, 6, 5}, 50), w = randn_tensor({4, 3, 3, 3}, 51);
  Conv2dParams p = params(2, 2, 0, 0, 1, 1, 1, 1, 1, false);
  const Shape out = conv2d_output_shape(x.shape(), w.shape(), p);
  Tensor y = Tensor::empty(out);
  conv2d_forward(x, w, Tensor(), y, p);
  Tensor xp = Tensor::zeros({1, 3, 7, 6});
  xp.slice(2, 0, 6).slice(3, 0, 5).copy_from(x);
  expect_close(y.to_vector(), naive_conv(xp, w, Tensor(), params(2, 2, 0, 0, -1, -1, 1, 1, 1, false), out), 1e-5,
               "CPU vs padded naive");
  VT_SKIP_WITHOUT_GPU();
  Tensor gy = Tensor::empty(out, DType::F32, Device::cuda(0));
  conv2d_forward(x.to(Device::cuda(0)), w.to(Device::cuda(0)), Tensor(), gy, p);
  expect_close(gy.to_vector(), y.to_vector(), 1e-5, "CUDA vs CPU");
}

Pool2dParams pool(PoolKind kind, int k, int s, int pad) {
  Pool2dParams p;
  p.kind = kind, p.kernel_h = p.kernel_w = k, p.stride_h = p.stride_w = s, p.pad_h = p.pad_w = pad;
  return p;
}

TEST(CudaPool, MatchesCpuTwin) {
  struct Case {
    const char* name;
    Pool2dParams p;
    int64_t y_extra;
  } cases[] = {
      {"max 3x3 stride 2", pool(PoolKind::Max, 3, 2, 0), 3},
      {"max 3x3 stride 1 pad 1", pool(PoolKind::Max, 3, 1, 1), 0},
      {"avg excluding pad 3x3 stride 1 pad 1", pool(PoolKind::AvgExcludePad, 3, 1, 1), 2},
      {"avg including pad 3x3 stride 2 pad 1", pool(PoolKind::AvgIncludePad, 3, 2, 1), 0},
  };
  const Tensor xbuf = randn_tensor({2, 7, 11, 9}, 60);
  const Tensor x = xbuf.slice(1, 2, 7);  // a channel slice as input
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    const Shape out = pool2d_output_shape(x.shape(), k.p);
    Tensor ybuf = Tensor::full({out[0], out[1] + k.y_extra, out[2], out[3]}, 7.f);
    Tensor y = ybuf.slice(1, k.y_extra, k.y_extra + out[1]);
    pool2d_forward(x, y, k.p);
    if (!cuda_available()) continue;
    const Device dev = Device::cuda(0);
    Tensor gybuf = Tensor::full(ybuf.shape(), 7.f, dev);
    pool2d_forward(xbuf.to(dev).slice(1, 2, 7), gybuf.slice(1, k.y_extra, k.y_extra + out[1]), k.p);
    const Tensor got = gybuf.to(Device::cpu());
    const std::vector<float> g = got.slice(1, k.y_extra, k.y_extra + out[1]).contiguous().to_vector(),
                             want = y.contiguous().to_vector();
    if (k.p.kind == PoolKind::Max) EXPECT_EQ(g, want);
    else expect_close(g, want, 1e-6, "CUDA vs CPU");
    for (float v : got.slice(1, 0, k.y_extra).contiguous().to_vector()) ASSERT_EQ(v, 7.f);
  }
  VT_SKIP_WITHOUT_GPU();
}

TEST(CudaPool, GlobalAverageIsTheCpuBits) {
  const Tensor x = randn_tensor({3, 5, 7, 6}, 70);
  Tensor y = Tensor::empty({3, 5}), y4 = Tensor::empty({3, 5, 1, 1});
  global_avg_pool2d(x, y);
  global_avg_pool2d(x, y4);
  for (int64_t r = 0; r < 15; ++r) {  // closed form: the double mean of the plane
    double s = 0;
    for (int64_t i = 0; i < 42; ++i) s += x.f32()[r * 42 + i];
    ASSERT_EQ(y.f32()[r], static_cast<float>(s / 42.0));
  }
  VT_SKIP_WITHOUT_GPU();
  Tensor gy = Tensor::empty({3, 5}, DType::F32, Device::cuda(0)), gy4 = Tensor::empty({3, 5, 1, 1}, DType::F32, Device::cuda(0));
  const Tensor gx = x.to(Device::cuda(0));
  global_avg_pool2d(gx, gy);
  global_avg_pool2d(gx, gy4);
  EXPECT_EQ(gy.to_vector(), y.to_vector());
  EXPECT_EQ(gy4.to_vector(), y4.to_vector());
}

TEST(CudaResize, BilinearIsTheCpuBits) {
  const Tensor x = randn_tensor({2, 3, 37, 23}, 80);
  for (const Shape& os : {Shape{2, 3, 13, 29}, Shape{2, 3, 53, 11}, Shape{2, 3, 37, 23}, Shape{2, 3, 1, 1}}) {
    SCOPED_TRACE(shape_str(os));
    Tensor y = Tensor::empty(os);
    resize_bilinear(x, y);
    if (!cuda_available()) continue;
    Tensor gy = Tensor::empty(os, DType::F32, Device::cuda(0));
    resize_bilinear(x.to(Device::cuda(0)), gy);
    EXPECT_EQ(gy.to_vector(), y.to_vector());
  }
  VT_SKIP_WITHOUT_GPU();
}

}  // namespace
}  // namespace vt
