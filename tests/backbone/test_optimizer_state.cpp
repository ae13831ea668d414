// OptimizerState against closed forms: the first AdamW step of torch.optim.AdamW
// (m_hat = g, v_hat = g^2; decoupled decay only where ParamInfo::weight_decay),
// the EMA update, named checkpoint views and the checks of a load.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backbone/optimizer_state.h"
#include "test_fs.h"

namespace vt {
namespace {

struct Fixture {
  ParamStore s;
  ParamId w, b;
  Fixture() {
    w = s.add("fc.weight", {2, 3}, ParamInit::zeros(), true);
    b = s.add("fc.bias", {2}, ParamInit::zeros(), false);
    s.finalize();
    const float wv[] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f}, bv[] = {0.1f, -0.2f};
    const float gw[] = {0.3f, -0.1f, 0.0f, 2.0f, -4.0f, 0.5f}, gb[] = {-0.6f, 0.05f};
    for (int i = 0; i < 6; ++i) s.value(w).f32()[i] = wv[i], s.grad(w).f32()[i] = gw[i];
    for (int i = 0; i < 2; ++i) s.value(b).f32()[i] = bv[i], s.grad(b).f32()[i] = gb[i];
  }
};

TEST(OptimizerState, FirstAdamWStepMatchesTheClosedForm) {
  Fixture f;
  OptimizerState opt(f.s, /*with_ema=*/true);
  EXPECT_EQ(opt.decay_mask().numel(), f.s.numel());
  const std::vector<float> w0 = f.s.weights().to_vector(), g = f.s.grads().to_vector();
  AdamWParams hp;
  hp.lr = 0.01, hp.weight_decay = 0.1, hp.eps = 1e-8;
  opt.adamw_step(hp);
  EXPECT_EQ(opt.steps(), 1);
  const std::vector<float> w1 = f.s.weights().to_vector();
  for (int64_t i = 0; i < f.s.numel(); ++i) {
    // fc.weight decays, fc.bias does not (the flat buffer may pad between them).
    const bool decay = i < f.s.info(f.b).offset;
    double p = w0[i];
    if (decay) p *= 1.0 - hp.lr * hp.weight_decay;
    p -= hp.lr * g[i] / (std::fabs(g[i]) + hp.eps);
    EXPECT_NEAR(w1[i], p, 1e-6) << "element " << i;
    EXPECT_NEAR(opt.exp_avg().to_vector()[i], (1 - hp.beta1) * g[i], 1e-7);
    EXPECT_NEAR(opt.exp_avg_sq().to_vector()[i], (1 - hp.beta2) * g[i] * g[i], 1e-9);
  }
  // EMA: started as the initial weights, then d * ema + (1 - d) * w.
  opt.update_ema(0.75f);
  for (int64_t i = 0; i < f.s.numel(); ++i)
    EXPECT_NEAR(opt.ema().to_vector()[i], 0.75 * w0[i] + 0.25 * w1[i], 1e-6) << "element " << i;
}

TEST(OptimizerState, NamedViewsRoundTripAndLoadsAreChecked) {
  Fixture f;
  OptimizerState a(f.s, true);
  AdamWParams hp;
  a.adamw_step(hp);
  a.update_ema(0.5f);
  const auto od = a.optimizer_dict(), ed = a.ema_dict();
  ASSERT_EQ(od.size(), 4u);
  EXPECT_EQ(od.at("exp_avg.fc.weight").shape(), (Shape{2, 3}));
  EXPECT_EQ(od.at("exp_avg_sq.fc.bias").shape(), (Shape{2}));
  EXPECT_EQ(ed.at("fc.weight").shape(), (Shape{2, 3}));
  OptimizerState b(f.s, true);
  b.load_optimizer(od, "optimizer.safetensors");
  b.load_ema(ed, "ema.safetensors");
  EXPECT_EQ(b.exp_avg().to_vector(), a.exp_avg().to_vector());
  EXPECT_EQ(b.exp_avg_sq().to_vector(), a.exp_avg_sq().to_vector());
  EXPECT_EQ(b.ema().to_vector(), a.ema().to_vector());

  // Missing, mis-shaped and non-F32 tensors name the file and the tensor;
  // nothing is copied then.
  OptimizerState c(f.s, true);
  auto missing = od;
  missing.erase("exp_avg_sq.fc.bias");
  std::string m = vt_test::error_of([&] { c.load_optimizer(missing, "opt.st"); });
  EXPECT_NE(m.find("opt.st: missing tensor 'exp_avg_sq.fc.bias'"), std::string::npos) << m;
  EXPECT_EQ(c.exp_avg().to_vector(), std::vector<float>(static_cast<size_t>(f.s.numel()), 0.0f));  // untouched
  auto shaped = od;
  shaped["exp_avg.fc.weight"] = Tensor::zeros({3, 2});
  m = vt_test::error_of([&] { c.load_optimizer(shaped, "opt.st"); });
  EXPECT_NE(m.find("'exp_avg.fc.weight'"), std::string::npos) << m;
  EXPECT_NE(m.find("expected F32 [2, 3]"), std::string::npos) << m;
  auto typed = ed;
  typed["fc.bias"] = Tensor::zeros({2}, DType::BF16);
  m = vt_test::error_of([&] { c.load_ema(typed, "ema.st"); });
  EXPECT_NE(m.find("ema.st: tensor 'fc.bias' is BF16"), std::string::npos) << m;
  // Without an EMA there is nothing to update or load.
  OptimizerState d(f.s, false);
  EXPECT_FALSE(d.has_ema());
  EXPECT_TRUE(d.ema_dict().empty());
  EXPECT_THROW(d.update_ema(0.5f), std::logic_error);
}

}  // namespace
}  // namespace vt
