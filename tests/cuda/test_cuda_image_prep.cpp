// uint8 -> normalised input on CUDA against the CPU op (fp32: the same bits;
// bf16: one output rounding) and against the closed form (v/255 - mean)/std.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_test_util.h"
#include "kernels/image_prep.h"

namespace vt {
namespace {

using namespace cudatest;

TEST(CudaImagePrep, NormalizeU8MatchesCpuAndClosedForm) {
  const int64_t B = 2, H = 5, W = 7, C = 3;
  const std::vector<float> mean = {0.485f, 0.456f, 0.406f}, stdv = {0.229f, 0.224f, 0.225f};
  Tensor u8 = Tensor::empty({B, H, W, C}, DType::U8);
  for (int64_t i = 0; i < u8.numel(); ++i) u8.u8()[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  Tensor out = Tensor::empty({B, C, H, W});
  normalize_u8_hwc(u8, mean, stdv, out);
  for (int64_t n = 0; n < B; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x) {
          const double v = u8.u8()[((n * H + y) * W + x) * C + c];
          const double want = (v / 255.0 - mean[c]) / stdv[c];
          ASSERT_NEAR(out.f32()[((n * C + c) * H + y) * W + x], want, 2e-6 * (1.0 + std::fabs(want)));
        }
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible";
  Tensor gu8 = u8.to(Device::cuda(0));
  Tensor gout = Tensor::zeros({B, C, H, W}, DType::F32, Device::cuda(0));
  normalize_u8_hwc(gu8, mean, stdv, gout);
  EXPECT_EQ(gout.to_vector(), out.to_vector());
  Tensor g16 = Tensor::zeros({B, C, H, W}, DType::BF16, Device::cuda(0));
  normalize_u8_hwc(gu8, mean, stdv, g16);
  EXPECT_EQ(g16.to_vector(), out.to(DType::BF16).to_vector());  // one RNE rounding of the same fp32 value
}

}  // namespace
}  // namespace vt
