// The device-resident optimizer pieces of a training step on CUDA against
// their CPU twins: AdamW writing the bf16 weight copy in the same kernel,
// gradient clipping whose norm and coefficient stay on the device, and the
// fused update (update_prepare + fused_update) against the separate CPU path
// (clip_grad_norm, adamw_step, ema_update) with the device non-finite policy.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "cuda_test_util.h"
#include "kernels/elementwise.h"
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

// Steps 1-2 finite (the first clipped), 3 non-finite loss (skipped with
// max_nonfinite = 1), 4 finite, 5-6 non-finite (6 is one too many: stop),
// 7 finite but after the stop: the fused pass must equal the separate CPU
// path applied to steps 1, 2 and 4 only, and the records must say so.
TEST(CudaOptimDevice, FusedUpdateMatchesTheSeparatePathAndKeepsThePolicy) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t n = 5000;
  const Device dev = Device::cuda(0);
  const std::vector<float> g0 = randn(n, 5, 0.5);
  double sq = 0.0;
  for (float x : g0) sq += static_cast<double>(x) * x;
  const double norm0 = std::sqrt(sq);
  Tensor p = Tensor::from_vector(randn(n, 6), {n}), m = Tensor::zeros({n}), v = Tensor::zeros({n});
  Tensor ema = p.clone(), p16 = p.to(DType::BF16);
  std::vector<DecaySegment> segs{{0, 3000, true}, {3000, 2000, false}};
  const Tensor mask = decay_mask_from_segments(n, segs);
  Tensor gp = p.to(dev), gm = m.to(dev), gv = v.to(dev), gema = ema.to(dev), gp16 = p16.to(dev), gmask = mask.to(dev);
  Tensor state = make_update_state(dev, 0, 0);
  Tensor record = Tensor::zeros({kUpdateRecordHead + 2}, DType::I64, dev);
  const float decay = 0.9f;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> loss{2.0, 1.5, nan, 1.25, nan, nan, 1.0};
  const std::vector<int> want_status{kUpdateApplied, kUpdateApplied, kUpdateSkipped, kUpdateApplied,
                                     kUpdateSkipped, kUpdateStop, kUpdateStopped};
  int64_t t = 0;
  for (size_t i = 0; i < loss.size(); ++i) {
    const double lr = 1e-2 * (1.0 + 0.5 * static_cast<double>(i));
    // Gradients vary per step; the first step's are clipped (max_norm = norm / 2).
    Tensor g = Tensor::from_vector(g0, {n});
    scale(g, static_cast<float>(1.0 / (1.0 + static_cast<double>(i))), g);
    const Tensor gg = g.to(dev);
    UpdateHyper h{lr, 0.9, 0.99, 1e-8, 0.05, norm0 / 2, 1};
    const Tensor scalars = Tensor::from_vector({static_cast<float>(loss[i]), 7.0f}, {2}).to(dev);
    update_prepare(gg, scalars, state, record, h);
    fused_update(gp, gg, gm, gv, gmask, gp16, gema, decay, state);
    const Tensor rec = record.to(Device::cpu());
    const double* r = static_cast<const double*>(rec.raw());
    EXPECT_EQ(static_cast<int>(r[0]), want_status[i]) << "step " << i + 1;
    EXPECT_EQ(r[3], 7.0) << "the task's scalar comes back";
    if (want_status[i] != kUpdateApplied) continue;
    // The separate CPU path for an applied step.
    const double cpu_norm = clip_grad_norm(g, h.max_norm);
    EXPECT_NEAR(r[1], cpu_norm, 1e-9 * cpu_norm) << "grad norm of step " << i + 1;
    EXPECT_EQ(r[2], loss[i]);
    AdamWParams hp;
    hp.lr = lr, hp.beta1 = 0.9, hp.beta2 = 0.99, hp.eps = 1e-8, hp.weight_decay = 0.05;
    adamw_step(p, g, m, v, hp, ++t, mask, p16);
    ema_update(ema, p, decay);
  }
  EXPECT_EQ(t, 3);
  expect_close(gp.to_vector(), p.to_vector(), 1e-6, "param");
  expect_close(gm.to_vector(), m.to_vector(), 1e-6, "exp_avg");
  expect_close(gv.to_vector(), v.to_vector(), 1e-6, "exp_avg_sq");
  expect_close(gema.to_vector(), ema.to_vector(), 1e-6, "ema");
  // The bf16 copy is exactly the device weights rounded (written in the same pass).
  const std::vector<float> got = gp.to_vector(), copy = gp16.to_vector();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(copy[i], bf16_to_f32(f32_to_bf16(got[i]))) << i;
  // The device's update count is the applied steps'.
  const Tensor st = state.to(Device::cpu());
  EXPECT_EQ(static_cast<const UpdateState*>(st.raw())->t, 3);
  EXPECT_EQ(static_cast<const UpdateState*>(st.raw())->stopped, 1);
}

}  // namespace
}  // namespace vt
