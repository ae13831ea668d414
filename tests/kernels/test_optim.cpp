// AdamW against torch.optim.AdamW and against the update written out in
// double here; EMA, gradient norm and clipping against closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>

#include "kernels/kernel_test_util.h"
#include "kernels/optim.h"

namespace vt {
namespace {

using kernel_test::expect_close;

// Three AdamW steps, lr 0.1, betas (0.9, 0.999), eps 1e-8; elements 0..2
// with weight decay 0.1, element 3 without (mask 0). Expected values come
// from PyTorch 2.x in float64:
//   p_decay = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
//   p_nodecay = torch.tensor([0.25], dtype=torch.float64)
//   opt = torch.optim.AdamW([{'params': [p_decay], 'weight_decay': 0.1},
//                            {'params': [p_nodecay], 'weight_decay': 0.0}],
//                           lr=0.1, betas=(0.9, 0.999), eps=1e-8)
//   per step: set .grad to the rows of kGrads split 3 + 1, opt.step()
const float kGrads[3][4] = {{0.5f, -1.0f, 2.0f, 0.3f}, {-0.25f, 0.5f, 1.0f, -0.6f}, {0.125f, 2.0f, -3.0f, 0.9f}};
const double kTorchParams[3][4] = {
    {0.890000002, -1.880000001, 0.3950000005, 0.15000000333333322},
    {0.8544662986878463, -1.8345662973609032, 0.2978320372035104, 0.18661035526521935},
    {0.8118787219097756, -1.8619538130424145, 0.30305139657861424, 0.15228624776551114}};
const double kTorchExpAvg[4] = {0.030499999999999996, 0.16399999999999995, -0.047999999999999994,
                                0.06029999999999999};
const double kTorchExpAvgSq[4] = {0.0003275627500000003, 0.0052477510000000045, 0.013991004000000012,
                                  0.0012594600900000012};

TEST(AdamW, ThreeStepsMatchTorchAndClosedForm) {
  Tensor p = Tensor::from_vector({1.0f, -2.0f, 0.5f, 0.25f}, {4});
  Tensor g = Tensor::zeros({4}), m = Tensor::zeros({4}), v = Tensor::zeros({4});
  Tensor mask = decay_mask_from_segments(4, {{0, 3, true}, {3, 1, false}});
  AdamWParams hp;
  hp.lr = 0.1;
  hp.weight_decay = 0.1;
  // The update rule, written independently in double.
  double pd[4] = {1.0, -2.0, 0.5, 0.25}, md[4] = {}, vd[4] = {};
  const double wd[4] = {0.1, 0.1, 0.1, 0.0};
  for (int t = 1; t <= 3; ++t) {
    for (int i = 0; i < 4; ++i) g.f32()[i] = kGrads[t - 1][i];
    adamw_step(p, g, m, v, hp, t, mask);
    std::vector<double> want(4);
    for (int i = 0; i < 4; ++i) {
      const double gi = kGrads[t - 1][i];
      pd[i] *= 1.0 - 0.1 * wd[i];
      md[i] = 0.9 * md[i] + 0.1 * gi;
      vd[i] = 0.999 * vd[i] + 0.001 * gi * gi;
      const double mhat = md[i] / (1 - std::pow(0.9, t)), vhat = vd[i] / (1 - std::pow(0.999, t));
      pd[i] -= 0.1 * mhat / (std::sqrt(vhat) + 1e-8);
      want[i] = pd[i];
    }
    expect_close(want, p, 1e-6, 1e-6, "param vs closed form");
    expect_close(std::vector<double>(kTorchParams[t - 1], kTorchParams[t - 1] + 4), p, 1e-6, 1e-6,
                 "param vs torch");
  }
  expect_close(std::vector<double>(kTorchExpAvg, kTorchExpAvg + 4), m, 1e-7, 1e-6, "exp_avg");
  expect_close(std::vector<double>(kTorchExpAvgSq, kTorchExpAvgSq + 4), v, 1e-9, 1e-6, "exp_avg_sq");
}

TEST(AdamW, FirstStepIsSignStepAndNoMaskDecaysAll) {
  // At t = 1, m_hat = g and v_hat = g^2, so p1 = p0 (1 - lr wd) - lr g / (|g| + eps).
  const int64_t n = 50000;  // large enough for the threaded path
  Tensor p = kernel_test::randn({n}, 1), g = kernel_test::randn({n}, 2), m = Tensor::zeros({n}), v = Tensor::zeros({n});
  std::vector<double> p0 = kernel_test::to_double(p), gv = kernel_test::to_double(g), want(n);
  AdamWParams hp;
  hp.lr = 0.01;
  hp.weight_decay = 0.05;
  hp.eps = 1e-8;
  for (int64_t i = 0; i < n; ++i) want[i] = p0[i] * (1 - 0.01 * 0.05) - 0.01 * gv[i] / (std::fabs(gv[i]) + 1e-8);
  adamw_step(p, g, m, v, hp, 1);
  expect_close(want, p, 2e-6, 1e-6, "p1");
}

TEST(AdamW, BadArgumentsThrow) {
  Tensor p = Tensor::zeros({4}), g = Tensor::zeros({4}), m = Tensor::zeros({4}), v = Tensor::zeros({3});
  EXPECT_THROW(adamw_step(p, g, m, v, AdamWParams{}, 1), std::invalid_argument);
  EXPECT_THROW(adamw_step(p, g, m, Tensor::zeros({4}), AdamWParams{}, 0), std::invalid_argument);
  EXPECT_THROW(adamw_step(p, g, m, Tensor::zeros({4}), AdamWParams{}, 1, Tensor::zeros({4})),
               std::invalid_argument);  // F32 mask instead of U8
  EXPECT_THROW(decay_mask_from_segments(4, {{2, 3, true}}), std::invalid_argument);
}

TEST(Ema, ThreeUpdatesMatchClosedForm) {
  // ema_3 = d^3 e0 + (1 - d)(d^2 p1 + d p2 + p3)
  const float d = 0.9f;
  Tensor ema = Tensor::from_vector({1.0f, -1.0f, 4.0f}, {3});
  const float ps[3][3] = {{2.0f, 0.0f, 1.0f}, {3.0f, 1.0f, -1.0f}, {-2.0f, 5.0f, 0.5f}};
  for (auto& row : ps) ema_update(ema, Tensor::from_vector({row[0], row[1], row[2]}, {3}), d);
  const double e0[3] = {1.0, -1.0, 4.0};
  const double dd = 0.9;
  std::vector<double> want(3);
  for (int i = 0; i < 3; ++i)
    want[i] = dd * dd * dd * e0[i] + (1 - dd) * (dd * dd * ps[0][i] + dd * ps[1][i] + ps[2][i]);
  expect_close(want, ema, 1e-6, 1e-6, "ema");
  EXPECT_THROW(ema_update(ema, Tensor::zeros({4}), d), std::invalid_argument);
}

TEST(GradNorm, ClipMatchesClosedForm) {
  Tensor g = Tensor::from_vector({3.0f, 4.0f, 0.0f, -12.0f}, {4});  // norm 13
  EXPECT_NEAR(grad_norm(g), 13.0, 1e-12);
  EXPECT_NEAR(clip_grad_norm(g, 100.0), 13.0, 1e-12);
  expect_close({3.0, 4.0, 0.0, -12.0}, g, 0, 0, "unclipped");
  EXPECT_NEAR(clip_grad_norm(g, 1.0), 13.0, 1e-12);
  const double c = 1.0 / (13.0 + 1e-6);
  expect_close({3 * c, 4 * c, 0.0, -12 * c}, g, 1e-7, 1e-6, "clipped");
  EXPECT_NEAR(grad_norm(g), 13.0 * c, 1e-6);
}

TEST(GradNorm, LargeBufferAccumulatesInDoubleAndNonFiniteLeavesGradients) {
  const int64_t n = 100003;
  Tensor g = kernel_test::randn({n}, 3);
  double want = 0;
  for (double x : kernel_test::to_double(g)) want += x * x;
  EXPECT_NEAR(sum_of_squares(g), want, 1e-9 * want);
  g.f32()[17] = std::numeric_limits<float>::infinity();
  const float before = g.f32()[5];
  EXPECT_FALSE(std::isfinite(clip_grad_norm(g, 1.0)));
  EXPECT_EQ(g.f32()[5], before);
  EXPECT_THROW(clip_grad_norm(g, 0.0), std::invalid_argument);
}

}  // namespace
}  // namespace vt
