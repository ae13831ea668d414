// Parity of diffusion/gaussian_diffusion with tools/dit_diffusion_fixture.py
// (a float64 re-implementation of DiT's diffusion package): schedule arrays,
// q_sample, the learned-sigma loss terms and their gradient (autograd in the
// fixture), DDPM/DDIM steps, guidance, respacing, and the two embeddings.
// Plus independent checks: finite differences of the loss, alpha-bar
// reproduction by respaced betas, distinct step counts for every count.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "core/safetensors.h"
#include "diffusion/gaussian_diffusion.h"
#include "kernels/embedding.h"

namespace vt {
namespace {

const std::map<std::string, Tensor>& fx() {
  static const auto t = load_safetensors(std::string(VT_FIXTURES_DIR) + "/diffusion/diffusion.safetensors");
  return t;
}
const Tensor& F(const std::string& k) { return fx().at(k); }

double rel_err(const std::vector<double>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0, e = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(b[i])));
    e = std::max(e, std::fabs(a[i] - b[i]));
  }
  return m > 0 ? e / m : e;
}
double rel_err(const Tensor& a, const Tensor& b) {
  auto av = a.contiguous().to_vector();
  return rel_err(std::vector<double>(av.begin(), av.end()), b.contiguous().to_vector());
}
// Elementwise relative error (each element against itself), for arrays that
// span many orders of magnitude (schedules).
double elem_rel_err(const std::vector<double>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double e = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    e = std::max(e, std::fabs(a[i] - b[i]) / std::max(1e-30, std::fabs(static_cast<double>(b[i]))));
  return e;
}
std::vector<int> ints(const Tensor& t) {
  std::vector<int> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.i32()[i];
  return v;
}

TEST(GaussianDiffusion, ScheduleMatchesFixture) {
  const auto d = GaussianDiffusion::linear();
  ASSERT_EQ(d.num_steps(), 1000);
  EXPECT_LT(elem_rel_err(d.betas(), F("schedule.betas").to_vector()), 1e-6);
  EXPECT_LT(elem_rel_err(d.alphas_cumprod(), F("schedule.alphas_cumprod").to_vector()), 1e-6);
  EXPECT_LT(elem_rel_err(d.alphas_cumprod_prev(), F("schedule.alphas_cumprod_prev").to_vector()), 1e-6);
  EXPECT_LT(elem_rel_err(d.posterior_variance(), F("schedule.posterior_variance").to_vector()), 1e-6);
  EXPECT_LT(elem_rel_err(d.posterior_log_variance_clipped(),
                         F("schedule.posterior_log_variance_clipped").to_vector()), 1e-6);
  EXPECT_LT(elem_rel_err(d.posterior_mean_coef1(), F("schedule.posterior_mean_coef1").to_vector()), 1e-6);
  EXPECT_LT(elem_rel_err(d.posterior_mean_coef2(), F("schedule.posterior_mean_coef2").to_vector()), 1e-6);
}

TEST(GaussianDiffusion, QSampleMatchesFixture) {
  const auto d = GaussianDiffusion::linear();
  const Tensor x0 = F("loss.x0");
  Tensor out = Tensor::empty(x0.shape());
  d.q_sample(x0, ints(F("loss.t")), F("loss.noise"), out);
  EXPECT_LT(rel_err(out, F("loss.x_t")), 1e-6);
}

TEST(GaussianDiffusion, LossTermsAndGradientMatchFixture) {
  const auto d = GaussianDiffusion::linear();
  const Tensor mo = F("loss.model_out");
  Tensor grad = Tensor::empty(mo.shape());
  const auto L = d.training_losses(mo, F("loss.x0"), F("loss.x_t"), F("loss.noise"), ints(F("loss.t")), grad);
  EXPECT_LT(rel_err(L.mse, F("loss.mse").to_vector()), 1e-5);
  EXPECT_LT(elem_rel_err(L.vb, F("loss.vb").to_vector()), 1e-5);  // t = 0 and t = 999 differ by 1e3
  EXPECT_LT(rel_err(L.loss, F("loss.loss").to_vector()), 1e-5);
  // The mean-loss gradient, per sample (the t = 0 row is much larger).
  const int64_t B = mo.size(0), R = mo.numel() / B;
  auto g = grad.to_vector(), w = F("loss.grad_model_out").to_vector();
  for (int64_t b = 0; b < B; ++b) {
    std::vector<double> gb(g.begin() + b * R, g.begin() + (b + 1) * R);
    std::vector<float> wb(w.begin() + b * R, w.begin() + (b + 1) * R);
    EXPECT_LT(rel_err(gb, wb), 1e-5) << "sample " << b;
  }
}

// Central differences of the loss in each variance channel (the eps channels'
// VB path is detached, so only the MSE part depends on them: checked too).
TEST(GaussianDiffusion, LossGradientMatchesFiniteDifferences) {
  for (T0Term t0 : {T0Term::Nll, T0Term::Kl, T0Term::Zero}) {
    const auto d = GaussianDiffusion::linear();
    Tensor mo = F("loss.model_out").clone();
    Tensor grad = Tensor::empty(mo.shape());
    const auto t = ints(F("loss.t"));
    d.training_losses(mo, F("loss.x0"), F("loss.x_t"), F("loss.noise"), t, grad, t0);
    const auto g = grad.to_vector();
    const int64_t R = mo.numel() / mo.size(0), C = mo.size(1) / 2, S = R / mo.size(1);
    // The VB term reads eps_hat detached: for eps channels the gradient is
    // that of the MSE part alone, for variance channels that of the loss.
    auto objective = [&](bool eps_channel) {
      const auto L = d.training_losses(mo, F("loss.x0"), F("loss.x_t"), F("loss.noise"), t, Tensor(), t0);
      if (!eps_channel) return L.mean;
      double m = 0;
      for (double v : L.mse) m += v;
      return m / static_cast<double>(L.mse.size());
    };
    for (int64_t i = 0; i < mo.numel(); i += 7) {
      const bool eps_channel = (i % R) / S < C;
      const float keep = mo.f32()[i];
      const float h = 1e-2f;
      mo.f32()[i] = keep + h;
      const double lp = objective(eps_channel);
      mo.f32()[i] = keep - h;
      const double lm = objective(eps_channel);
      mo.f32()[i] = keep;
      const double fd = (lp - lm) / (static_cast<double>(keep + h) - static_cast<double>(keep - h));
      EXPECT_NEAR(g[static_cast<size_t>(i)], fd, 2e-3 * std::fabs(fd) + 1e-6) << "element " << i;
    }
  }
}

TEST(GaussianDiffusion, T0TermChoicesDifferOnlyAtZero) {
  const auto d = GaussianDiffusion::linear();
  const Tensor mo = F("loss.model_out");
  const auto t = ints(F("loss.t"));
  ASSERT_EQ(t[0], 0);
  auto nll = d.training_losses(mo, F("loss.x0"), F("loss.x_t"), F("loss.noise"), t, Tensor(), T0Term::Nll);
  auto kl = d.training_losses(mo, F("loss.x0"), F("loss.x_t"), F("loss.noise"), t, Tensor(), T0Term::Kl);
  auto zero = d.training_losses(mo, F("loss.x0"), F("loss.x_t"), F("loss.noise"), t, Tensor(), T0Term::Zero);
  EXPECT_EQ(zero.vb[0], 0.0);
  EXPECT_GT(kl.vb[0], 0.0);
  EXPECT_NE(kl.vb[0], nll.vb[0]);
  for (size_t b = 1; b < t.size(); ++b) {
    EXPECT_EQ(nll.vb[b], kl.vb[b]);
    EXPECT_EQ(nll.vb[b], zero.vb[b]);
  }
}

TEST(GaussianDiffusion, DdpmAndDdimStepsMatchFixture) {
  const Tensor mo = F("loss.model_out"), x = F("step.x"), z = F("step.noise");
  Tensor out = Tensor::empty(x.shape());
  GaussianDiffusion::linear().ddpm_step(mo, x, ints(F("loss.t")), z, out);
  EXPECT_LT(rel_err(out, F("step.ddpm_full")), 1e-5);
  const auto sp = GaussianDiffusion::respaced("ddim25");
  sp.ddim_step(mo, x, ints(F("step.t_respaced")), 0.5, z, out);
  EXPECT_LT(rel_err(out, F("step.ddim_ddim25_eta05")), 1e-5);
  sp.ddpm_step(mo, x, ints(F("step.t_respaced")), z, out);
  EXPECT_LT(rel_err(out, F("step.ddpm_ddim25")), 1e-5);
}

TEST(GaussianDiffusion, DdimWithEtaZeroIgnoresNoiseAndInvertsQSample) {
  // With eps_hat equal to the true noise, a DDIM step (eta 0) from x_t lands
  // exactly on q_sample(x0, t-1, same noise): a closed form, not the fixture.
  const auto d = GaussianDiffusion::linear();
  const Tensor x0 = F("loss.x0"), e = F("loss.noise");
  const std::vector<int> t = {5, 5, 300, 999};
  Tensor xt = Tensor::empty(x0.shape()), want = Tensor::empty(x0.shape()), out = Tensor::empty(x0.shape());
  d.q_sample(x0, t, e, xt);
  d.q_sample(x0, {4, 4, 299, 998}, e, want);
  const int64_t B = x0.size(0), N = x0.numel() / B;
  Tensor mo = Tensor::zeros({B, 2 * x0.size(1), x0.size(2), x0.size(3)});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < N; ++i) mo.f32()[b * 2 * N + i] = e.f32()[b * N + i];
  d.ddim_step(mo, xt, t, 0.0, Tensor(), out);
  EXPECT_LT(rel_err(out, want), 1e-5);
}

TEST(GaussianDiffusion, GuidanceMatchesFixture) {
  const Tensor mo = F("cfg.model_out");
  Shape s = mo.shape();
  s[0] /= 2;
  Tensor out = Tensor::empty(s);
  cfg_combine(mo, 4.0, -1, out);
  EXPECT_LT(rel_err(out, F("cfg.guided_all")), 1e-6);
  cfg_combine(mo, 4.0, 3, out);
  EXPECT_LT(rel_err(out, F("cfg.guided_dit3")), 1e-6);
  EXPECT_THROW(cfg_combine(mo, 4.0, 5, out), std::invalid_argument);
}

TEST(GaussianDiffusion, RespacingMatchesFixture) {
  for (const std::string n : {"1", "2", "3", "9", "27", "81", "250", "1000", "ddim25"}) {
    const auto want = ints(F("respace." + n + ".steps"));
    EXPECT_EQ(space_timesteps(1000, n), want) << n;
    const auto sp = GaussianDiffusion::respaced(n);
    EXPECT_EQ(sp.timestep_map(), want) << n;
    EXPECT_LT(elem_rel_err(sp.betas(), F("respace." + n + ".betas").to_vector()), 1e-6) << n;
  }
}

TEST(GaussianDiffusion, RespacedBetasReproduceAlphaBar) {
  const auto full = GaussianDiffusion::linear();
  for (const std::string n : {"1", "2", "3", "9", "27", "81", "250", "1000", "ddim50", "10,20,30"}) {
    const auto sp = GaussianDiffusion::respaced(n);
    // Independent recomputation: product of (1 - beta) over the full schedule.
    for (int k = 0; k < sp.num_steps(); ++k) {
      double ab = 1.0;
      for (int i = 0; i <= sp.timestep_map()[static_cast<size_t>(k)]; ++i) ab *= 1.0 - full.betas()[static_cast<size_t>(i)];
      EXPECT_NEAR(sp.alphas_cumprod()[static_cast<size_t>(k)], ab, 1e-12 * ab) << n << " step " << k;
    }
  }
}

TEST(GaussianDiffusion, EveryCountGivesThatManyDistinctSteps) {
  for (int n = 1; n <= 1000; ++n) {
    const auto s = space_timesteps(1000, std::to_string(n));
    ASSERT_EQ(static_cast<int>(s.size()), n) << n;
    EXPECT_EQ(s.front(), 0);
    if (n > 1) {
      EXPECT_EQ(s.back(), 999) << n;
    }
  }
  EXPECT_THROW(space_timesteps(1000, "0"), std::invalid_argument);
  EXPECT_THROW(space_timesteps(1000, "1001"), std::invalid_argument);
  EXPECT_THROW(space_timesteps(1000, "ddim999"), std::invalid_argument);  // strides 1, 2 give 1000, 500
  EXPECT_THROW(space_timesteps(1000, "abc"), std::invalid_argument);
  EXPECT_THROW(t0_term_from_name("bogus"), std::invalid_argument);
}

TEST(GaussianDiffusion, BadShapesThrow) {
  const auto d = GaussianDiffusion::linear();
  Tensor x = Tensor::zeros({2, 3, 4, 4}), bad = Tensor::zeros({2, 5, 4, 4});
  EXPECT_THROW(d.q_sample(x, {1}, x, x), std::invalid_argument);
  EXPECT_THROW(d.q_sample(x, {1, 1000}, x, x), std::invalid_argument);
  EXPECT_THROW(d.training_losses(bad, x, x, x, {1, 2}), std::invalid_argument);
  EXPECT_THROW(d.ddpm_step(Tensor::zeros({2, 6, 4, 4}), x, {1, 2}, bad, x), std::invalid_argument);
}

TEST(Embeddings, TimestepAndPositionMatchFixture) {
  const Tensor t = F("embed.t");
  Tensor te = Tensor::empty({t.numel(), 16});
  timestep_embedding(t, te);
  EXPECT_LT(rel_err(te, F("embed.timestep16")), 1e-5);
  Tensor pe = Tensor::empty({16, 16});
  sincos_pos_embed_2d(4, 4, pe);
  EXPECT_LT(rel_err(pe, F("embed.pos_4x4x16")), 1e-6);
}

}  // namespace
}  // namespace vt
