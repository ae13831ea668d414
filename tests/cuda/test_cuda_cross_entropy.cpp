// Cross-entropy on CUDA (hard labels with and without smoothing, soft
// targets) against the CPU op on the same inputs: loss, correct count,
// dlogits and pred; the *_to_stats ops leave the result on the device.
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_test_util.h"
#include "kernels/cross_entropy.h"

namespace vt {
namespace {

using namespace cudatest;

Tensor labels_of(int64_t b, int64_t k) {
  Tensor t = Tensor::empty({b}, DType::I32);
  Philox rng(5, 6);
  for (int64_t i = 0; i < b; ++i) t.i32()[i] = static_cast<int32_t>(rng.integer(0, k - 1));
  return t;
}

TEST(CudaCrossEntropy, HardLabelsMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 7, K = 300;  // K > 256: each thread covers several classes
  Tensor logits = Tensor::from_vector(randn(B * K, 1, 3.0), {B, K});
  Tensor labels = labels_of(B, K);
  // A tie for the maximum: the first index must win on both devices.
  logits.f32()[2 * K + 10] = 50.0f;
  logits.f32()[2 * K + 200] = 50.0f;
  for (float smoothing : {0.0f, 0.1f}) {
    Tensor dl = Tensor::empty({B, K}), pred = Tensor::empty({B}, DType::I32);
    const CrossEntropyResult want = cross_entropy_forward_backward(logits, labels, smoothing, dl, 0.5f, pred);
    Tensor gl = logits.to(Device::cuda(0)), gdl = Tensor::zeros({B, K}, DType::F32, Device::cuda(0));
    Tensor gpred = Tensor::zeros({B}, DType::I32, Device::cuda(0));
    const CrossEntropyResult got =
        cross_entropy_forward_backward(gl, labels.to(Device::cuda(0)), smoothing, gdl, 0.5f, gpred);
    EXPECT_NEAR(got.loss, want.loss, 1e-12 * std::fabs(want.loss)) << smoothing;
    EXPECT_EQ(got.correct, want.correct);
    expect_close(gdl.to_vector(), dl.to_vector(), 1e-5, "dlogits");
    EXPECT_EQ(gpred.to_vector(), pred.to_vector());
    EXPECT_EQ(pred.i32()[2], 10);
    // dlogits aliasing logits gives the same gradient and the same loss:
    // every read of a row (the label's logit for the loss included) comes
    // before any thread overwrites it (emu.kernels_reverse_thread_order runs
    // this with the threads in the other order).
    Tensor alias = logits.to(Device::cuda(0));
    const CrossEntropyResult in_place =
        cross_entropy_forward_backward(alias, labels.to(Device::cuda(0)), smoothing, alias, 0.5f);
    expect_close(alias.to_vector(), dl.to_vector(), 1e-5, "dlogits in place");
    EXPECT_NEAR(in_place.loss, want.loss, 1e-12 * std::fabs(want.loss)) << "in place, smoothing " << smoothing;
    EXPECT_EQ(in_place.correct, want.correct);
  }
}

TEST(CudaCrossEntropy, SoftTargetsToDeviceStatsMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 5, K = 40;
  Tensor logits = Tensor::from_vector(randn(B * K, 2, 2.0), {B, K});
  // Mixup-like targets: two classes per row with weights lambda and 1 - lambda.
  std::vector<float> t(B * K, 0.0f);
  for (int64_t r = 0; r < B; ++r) {
    t[r * K + (3 * r) % K] += 0.7f;
    t[r * K + (5 * r + 1) % K] += 0.3f;
  }
  Tensor targets = Tensor::from_vector(t, {B, K});
  Tensor dl = Tensor::empty({B, K}), stats = Tensor::zeros({2});
  soft_cross_entropy_to_stats(logits, targets, dl, stats);
  // The CPU stats equal the returned result.
  Tensor dl2 = Tensor::empty({B, K});
  const CrossEntropyResult want = soft_cross_entropy_forward_backward(logits, targets, dl2);
  EXPECT_EQ(stats.f32()[0], static_cast<float>(want.loss));
  Tensor gdl = Tensor::zeros({B, K}, DType::F32, Device::cuda(0));
  Tensor gstats = Tensor::zeros({2}, DType::F32, Device::cuda(0));
  soft_cross_entropy_to_stats(logits.to(Device::cuda(0)), targets.to(Device::cuda(0)), gdl, gstats);
  const std::vector<float> s = gstats.to_vector();
  EXPECT_NEAR(s[0], want.loss, 1e-6 * std::fabs(want.loss));
  EXPECT_EQ(s[1], static_cast<float>(want.correct));
  expect_close(gdl.to_vector(), dl.to_vector(), 1e-5, "dlogits");
  // A bad CUDA label on the no-wait path: a NaN loss, not a silent number.
  Tensor bad = labels_of(B, K);
  bad.i32()[1] = static_cast<int32_t>(K);
  cross_entropy_to_stats(logits.to(Device::cuda(0)), bad.to(Device::cuda(0)), 0.0f, Tensor(), gstats);
  EXPECT_TRUE(std::isnan(gstats.to_vector()[0]));
  EXPECT_THROW(cross_entropy_forward_backward(logits.to(Device::cuda(0)), bad.to(Device::cuda(0)), 0.0f, Tensor()),
               std::invalid_argument);
}

}  // namespace
}  // namespace vt
