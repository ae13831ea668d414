// The device-resident optimizer pieces of a training step on CUDA against
// their CPU twins: AdamW writing the bf16 weight copy in the same kernel,
// and gradient clipping whose norm and coefficient stay on the device.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cuda_test_util.h"
#include "kernels/optim.h"

namespace vt {
namespace {

using namespace cudatest;

TEST(CudaOptimDevice, AdamWWritesTheBf16WeightCopy) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t n = 1000;
  Tensor p = Tensor::from_vector(randn(n, 1), {n}), g = Tensor::from_vector(randn(n, 2, 0.1), {n});
  Tensor m = Tensor::zeros({n}), v = Tensor::zeros({n}), p16 = Tensor::zeros({n}, DType::BF16);
  Tensor gp = p.to(Device::cuda(0)), gg = g.to(Device::cuda(0)), gm = m.to(Device::cuda(0)), gv = v.to(Device::cuda(0));
  Tensor gp16 = p16.to(Device::cuda(0));
  AdamWParams hp;
  hp.lr = 1e-2;
  hp.weight_decay = 0.05;
  for (int64_t step = 1; step <= 3; ++step) {
    adamw_step(p, g, m, v, hp, step, Tensor(), p16);
    adamw_step(gp, gg, gm, gv, hp, step, Tensor(), gp16);
  }
  const std::vector<float> got = gp.to_vector();
  expect_close(got, p.to_vector(), 1e-6, "param");
  // The copy is exactly the device fp32 weights rounded to bf16 (host rounding as the reference).
  const std::vector<float> copy = gp16.to_vector();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(copy[i], bf16_to_f32(f32_to_bf16(got[i]))) << i;
  expect_close(copy, p16.to_vector(), out_tol(DType::BF16), "bf16 copy vs CPU");
}

TEST(CudaOptimDevice, ClipGradNormKeepsTheNormOnTheDevice) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t n = 5000;  // several reduction blocks
  const std::vector<float> gv = randn(n, 3, 2.0);
  double sq = 0.0;
  for (float x : gv) sq += static_cast<double>(x) * x;
  const double norm = std::sqrt(sq);
  for (double max_norm : {norm / 3.0, norm * 2.0}) {  // clipped, and untouched
    Tensor g = Tensor::from_vector(gv, {n}), gg = g.to(Device::cuda(0));
    Tensor norm_cpu = Tensor::zeros({1}), norm_gpu = Tensor::zeros({1}, DType::F32, Device::cuda(0));
    clip_grad_norm_on_device(g, max_norm, norm_cpu);
    clip_grad_norm_on_device(gg, max_norm, norm_gpu);
    EXPECT_NEAR(norm_gpu.item(), norm, 1e-6 * norm);
    EXPECT_NEAR(norm_cpu.item(), norm, 1e-6 * norm);
    expect_close(gg.to_vector(), g.to_vector(), 1e-6, "clipped grads");
    if (max_norm > norm) EXPECT_EQ(gg.to_vector(), gv);  // coef >= 1: not touched
    else {
      double sq2 = 0.0;
      for (float x : gg.to_vector()) sq2 += static_cast<double>(x) * x;
      EXPECT_NEAR(std::sqrt(sq2), max_norm, 1e-5 * max_norm);  // the closed form: clipped to max_norm
    }
  }
  // A non-finite norm leaves the gradients as they are (the step is skipped).
  std::vector<float> bad = gv;
  bad[17] = std::numeric_limits<float>::infinity();
  Tensor gb = Tensor::from_vector(bad, {n}).to(Device::cuda(0));
  Tensor nb = Tensor::zeros({1}, DType::F32, Device::cuda(0));
  clip_grad_norm_on_device(gb, 1.0, nb);
  EXPECT_TRUE(std::isinf(nb.item()));
  EXPECT_EQ(gb.to_vector(), bad);
}

}  // namespace
}  // namespace vt
