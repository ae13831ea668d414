// The bf16 ops the VAE's precision bf16 runs (vae/vae_precision.h), on
// emulated CUDA, each against an independent CPU fp32 reference fed the same
// bf16-rounded inputs, so the only differences left are the roundings the
// op documents (bf16's unit roundoff u = 2^-8: 8 significant bits, round to
// nearest even) and fp32 accumulation order:
//   conv2d_forward BF16 (kernels/conv.h) through cuDNN's ConvMath::Bf16 and
//     through the hand-written fallback: y = bf16(bf16(conv) + b) (cuDNN;
//     the fallback rounds once), so
//       |y - ref| <= u |conv| + u |conv + b| + u^2 |conv| + 2 K 2^-24 sum |x w|
//     (K = C/G KH KW terms; the last term is both sides' fp32 accumulation);
//   groupnorm_forward BF16 (kernels/groupnorm.h): the fp32 result rounded
//     once, |y - ref| <= u |ref| + (1 + u) e with e the fp32 agreement the
//     header states (1e-5 of the output scale);
//   upsample_nearest2x BF16: a copy, equal bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "kernels/conv.h"
#include "kernels/groupnorm.h"
#include "kernels/upsample.h"
#include "test_fs.h"
#include "vae_emu_models.h"

namespace vt {
namespace {

using namespace vae_emu;

const double kU = std::ldexp(1.0, -8);  // bf16 unit roundoff

// t's values rounded to bf16 (nearest even), held as F32.
Tensor bf16_values(const Tensor& t) { return t.to(DType::BF16).to(DType::F32); }
// The bf16 copy of t on the emulated device.
Tensor gpu_bf16(const Tensor& t) { return t.to(DType::BF16).to(kGpu); }

Tensor abs_of(const Tensor& t) {
  Tensor a = t.contiguous().clone();
  float* p = a.f32();
  for (int64_t i = 0; i < a.numel(); ++i) p[i] = std::fabs(p[i]);
  return a;
}

// One convolution in bf16 on the device against the CPU's fp32 convolution
// of the same bf16 values; y a channel slice of a wider buffer when `slice`.
void check_conv(const Shape& xs, const Shape& ws, const Conv2dParams& p, bool slice, const std::string& what) {
  const Tensor x = bf16_values(randn(xs, 51, 0, 1.0, 0.2));
  const Tensor w = bf16_values(randn(ws, 52, 0, 1.0 / std::sqrt(double(ws[1] * ws[2] * ws[3]))));
  const Tensor b = bf16_values(randn({ws[0]}, 53, 0, 0.5));
  const Shape out = conv2d_output_shape(xs, ws, p);
  Tensor want = Tensor::empty(out), s = Tensor::empty(out);
  conv2d_forward(x, w, b, want, p);
  conv2d_forward(abs_of(x), abs_of(w), Tensor(), s, p);  // sum |x w| per output
  Tensor buf = Tensor::empty({out[0], out[1] + (slice ? 5 : 0), out[2], out[3]}, DType::BF16, kGpu);
  const Tensor y = slice ? buf.slice(1, 3, 3 + out[1]) : buf;
  conv2d_forward(gpu_bf16(x), gpu_bf16(w), b.to(kGpu), y, p);
  ASSERT_EQ(y.dtype(), DType::BF16);
  const std::vector<float> g = y.to_vector(), r = want.to_vector(), sv = s.to_vector(), bv = b.to_vector();
  const int64_t k = ws[1] * ws[2] * ws[3], plane = out[2] * out[3];
  double worst = 0, any = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    const double bias = bv[(i / plane) % out[1]], conv = double(r[i]) - bias;
    const double bound = kU * std::fabs(conv) + kU * std::fabs(r[i]) + kU * kU * std::fabs(conv) +
                         2.0 * k * std::ldexp(1.0, -24) * sv[i];
    const double e = std::fabs(double(g[i]) - r[i]);
    worst = std::max(worst, e / bound);
    any = std::max(any, e);
  }
  EXPECT_LE(worst, 1.0) << what << ": largest error / bf16 bound";
  EXPECT_GT(any, 0.0) << what << ": no rounding at all: did bf16 run?";
  std::printf("%s: largest error %.3g, %.2f of the bf16 bound\n", what.c_str(), any, worst);
}

void check_conv_shapes(const char* path) {
  Conv2dParams same;  // ResnetBlock2D's 3x3
  same.pad_h = same.pad_w = 1;
  check_conv({2, 16, 9, 7}, {24, 16, 3, 3}, same, false, std::string(path) + " 3x3");
  Conv2dParams down;  // Downsample2D: F.pad (0, 1, 0, 1), 3x3 stride 2
  down.stride_h = down.stride_w = 2;
  down.pad_h_end = down.pad_w_end = 1;
  check_conv({1, 8, 8, 10}, {8, 8, 3, 3}, down, false, std::string(path) + " downsample");
  check_conv({2, 12, 5, 6}, {20, 12, 1, 1}, Conv2dParams{}, true, std::string(path) + " 1x1 into a channel slice");
}

TEST(VaeBf16Ops, ConvolutionWithinTheBf16Bound) {
  std::printf("convolutions on emulated CUDA: %s\n", conv_uses_cudnn() ? "cuDNN (cudnn_emu.cpp)" : "hand-written kernel");
  check_conv_shapes(conv_uses_cudnn() ? "cuDNN" : "hand-written");
  if (!conv_uses_cudnn()) return;
  set_conv_cudnn(false);  // the fallback: fp32 kernel over widened operands
  check_conv_shapes("hand-written");
  set_conv_cudnn(true);
}

TEST(VaeBf16Ops, ConvolutionDtypeErrors) {
  const Tensor x = Tensor::zeros({1, 2, 3, 3}, DType::BF16), w = Tensor::zeros({2, 2, 1, 1}, DType::BF16);
  Tensor y = Tensor::zeros({1, 2, 3, 3}, DType::BF16);
  const std::string m1 = vt_test::error_of([&] { conv2d_forward(x, w, Tensor(), y, Conv2dParams{}); });
  EXPECT_NE(m1.find("conv2d_forward"), std::string::npos) << m1;
  EXPECT_NE(m1.find("BF16"), std::string::npos) << m1;  // bf16 on the CPU
  const std::string m2 = vt_test::error_of(
      [&] { conv2d_forward(x.to(kGpu), w.to(DType::F32).to(kGpu), Tensor(), y.to(kGpu), Conv2dParams{}); });
  EXPECT_NE(m2.find("w"), std::string::npos) << m2;  // mixed dtypes
}

TEST(VaeBf16Ops, GroupNormWithinOneRounding) {
  const Tensor x = bf16_values(randn({2, 64, 5, 6}, 61, 0, 1.5, 0.3));
  const Tensor wt = bf16_values(randn({64}, 62, 0, 0.1, 1.0)), bs = bf16_values(randn({64}, 63, 0, 0.1));
  for (bool silu : {false, true}) {
    Tensor want = Tensor::empty(x.shape());
    groupnorm_forward(x, 32, wt, bs, 1e-6f, want, silu);
    const Tensor xg = gpu_bf16(x);
    Tensor y = Tensor::empty(x.shape(), DType::BF16, kGpu);
    groupnorm_forward(xg, 32, wt.to(kGpu), bs.to(kGpu), 1e-6f, y, silu);
    groupnorm_forward(xg, 32, wt.to(kGpu), bs.to(kGpu), 1e-6f, xg, silu);  // in place
    const std::vector<float> g = y.to_vector(), r = want.to_vector();
    EXPECT_EQ(xg.to_vector(), g) << "in place differs";
    double scale = 0;
    for (float v : r) scale = std::max(scale, double(std::fabs(v)));
    const double e_fp32 = 1e-5 * scale;
    double worst = 0, any = 0;
    for (size_t i = 0; i < r.size(); ++i) {
      const double e = std::fabs(double(g[i]) - r[i]);
      worst = std::max(worst, e / (kU * std::fabs(r[i]) + (1 + kU) * e_fp32));
      any = std::max(any, e);
    }
    EXPECT_LE(worst, 1.0) << "silu " << silu;
    EXPECT_GT(any, e_fp32) << "silu " << silu << ": no bf16 rounding seen";
    std::printf("groupnorm bf16 (silu %d): largest error %.3g, %.2f of the bound\n", silu, any, worst);
  }
  Tensor y = Tensor::empty(x.shape(), DType::F32, kGpu);
  const std::string m = vt_test::error_of([&] { groupnorm_forward(gpu_bf16(x), 32, Tensor(), Tensor(), 1e-6f, y); });
  EXPECT_NE(m.find("groupnorm_forward"), std::string::npos) << m;  // y must be x's dtype
}

TEST(VaeBf16Ops, UpsampleCopiesBf16Values) {
  const Tensor x = bf16_values(randn({2, 3, 4, 5}, 71, 0, 1.0));
  Tensor want = Tensor::empty({2, 3, 8, 10});
  upsample_nearest2x(x, want);
  Tensor y = Tensor::empty({2, 3, 8, 10}, DType::BF16, kGpu);
  upsample_nearest2x(gpu_bf16(x), y);
  EXPECT_EQ(y.to_vector(), want.to_vector());
}

}  // namespace
}  // namespace vt
