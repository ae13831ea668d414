// Mixup/CutMix application on CUDA against the CPU op (the same bits), and
// the CPU op against the closed forms of timm's batch mode computed here.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/mixup.h"

namespace vt {
namespace {

using namespace cudatest;

constexpr int64_t B = 4, C = 2, H = 5, W = 6, K = 7;

TEST(CudaMixup, CpuOpMatchesTimmBatchMode) {
  const std::vector<float> x = randn(B * C * H * W, 1);
  const double lam = 0.37;
  Tensor mixed = Tensor::from_vector(x, {B, C, H, W});
  mix_images(mixed, false, lam, MixBox());
  const float l = static_cast<float>(lam), m = static_cast<float>(1.0 - lam);
  const int64_t n = C * H * W;
  for (int64_t i = 0; i < B; ++i)
    for (int64_t k = 0; k < n; ++k)
      ASSERT_EQ(mixed.f32()[i * n + k], x[i * n + k] * l + x[(B - 1 - i) * n + k] * m) << i << " " << k;
  Tensor cut = Tensor::from_vector(x, {B, C, H, W});
  const MixBox box{1, 4, 2, 5};
  mix_images(cut, true, lam, box);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t xx = 0; xx < W; ++xx) {
          const bool in = y >= box.y0 && y < box.y1 && xx >= box.x0 && xx < box.x1;
          const int64_t src = in ? B - 1 - i : i, off = (c * H + y) * W + xx;
          ASSERT_EQ(cut.f32()[i * n + off], x[src * n + off]);
        }
  Tensor labels = Tensor::empty({B}, DType::I32);
  const int32_t lv[B] = {3, 0, 3, 6};
  for (int64_t i = 0; i < B; ++i) labels.i32()[i] = lv[i];
  Tensor t = Tensor::empty({B, K});
  mix_targets(labels, lam, 0.1, t);
  for (int64_t i = 0; i < B; ++i) {
    double sum = 0.0;
    for (int64_t k = 0; k < K; ++k) {
      const double off = 0.1 / K, on = 1.0 - 0.1 + off;
      const double want = (k == lv[i] ? on : off) * lam + (k == lv[B - 1 - i] ? on : off) * (1.0 - lam);
      EXPECT_NEAR(t.f32()[i * K + k], want, 1e-7);
      sum += t.f32()[i * K + k];
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);  // a distribution
  }
}

TEST(CudaMixup, DeviceMatchesCpu) {
  VT_SKIP_WITHOUT_GPU();
  const std::vector<float> x = randn(B * C * H * W, 2);
  for (DType dt : {DType::F32, DType::BF16}) {
    for (bool cutmix : {false, true}) {
      Tensor host = Tensor::from_vector(representable(x, dt), {B, C, H, W});
      Tensor dev = host.to(dt).to(Device::cuda(0));
      const MixBox box{0, 3, 1, 6};
      mix_images(host, cutmix, 0.81, box);
      mix_images(dev, cutmix, 0.81, box);
      // Exact in fp32; bf16 adds one rounding of the same fp32 value.
      EXPECT_EQ(dev.to_vector(), host.to(dt).to_vector()) << (cutmix ? "cutmix " : "mixup ") << dtype_name(dt);
    }
  }
  Tensor labels = Tensor::empty({B}, DType::I32);
  for (int64_t i = 0; i < B; ++i) labels.i32()[i] = static_cast<int32_t>((5 * i + 2) % K);
  Tensor t = Tensor::empty({B, K}), gt = Tensor::zeros({B, K}, DType::F32, Device::cuda(0));
  mix_targets(labels, 0.6, 0.1, t);
  mix_targets(labels.to(Device::cuda(0)), 0.6, 0.1, gt);
  EXPECT_EQ(gt.to_vector(), t.to_vector());
}

}  // namespace
}  // namespace vt
