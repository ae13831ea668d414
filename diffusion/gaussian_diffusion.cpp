#include "diffusion/gaussian_diffusion.h"

#include "kernels/diffusion.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace vt {
namespace {

// The step indices as the kernels take them (I32 CPU tensor).
Tensor t_tensor(const std::vector<int>& t) {
  Tensor out = Tensor::empty({static_cast<int64_t>(t.size())}, DType::I32);
  for (size_t i = 0; i < t.size(); ++i) out.i32()[i] = t[i];
  return out;
}

void check_cpu(const char* fn, const char* name, const Tensor& t) {
  if (t.defined() && !t.device().is_cpu())
    throw std::invalid_argument(std::string(fn) + ": " + name + " must be a CPU tensor, got " + t.str());
}

}  // namespace

DiffusionT0 diffusion_t0(T0Term t0) {
  return t0 == T0Term::Nll ? DiffusionT0::Nll : t0 == T0Term::Kl ? DiffusionT0::Kl : DiffusionT0::Zero;
}

T0Term t0_term_from_name(const std::string& s) {
  if (s == "nll") return T0Term::Nll;
  if (s == "kl") return T0Term::Kl;
  if (s == "zero") return T0Term::Zero;
  throw std::invalid_argument("diffusion.t0_term: expected nll | kl | zero, got '" + s + "'");
}

std::vector<double> linear_beta_schedule(int T) {
  if (T < 1) throw std::invalid_argument("linear_beta_schedule: num_timesteps must be >= 1, got " + std::to_string(T));
  const double scale = 1000.0 / T, lo = scale * 1e-4, hi = scale * 0.02;
  std::vector<double> b(static_cast<size_t>(T));
  // numpy.linspace: lo + i * step, the last element exactly hi.
  const double step = T > 1 ? (hi - lo) / (T - 1) : 0.0;
  for (int i = 0; i < T; ++i) b[static_cast<size_t>(i)] = lo + i * step;
  b.back() = T > 1 ? hi : lo;
  return b;
}

std::vector<int> space_timesteps(int T, const std::string& spec) {
  const std::string where = "space_timesteps('" + spec + "', T=" + std::to_string(T) + ")";
  if (spec.empty()) {
    std::vector<int> all(static_cast<size_t>(T));
    for (int i = 0; i < T; ++i) all[static_cast<size_t>(i)] = i;
    return all;
  }
  auto parse_int = [&](const std::string& s) {
    size_t pos = 0;
    int v = 0;
    try {
      v = std::stoi(s, &pos);
    } catch (const std::exception&) {
      pos = std::string::npos;
    }
    if (pos != s.size() || s.empty()) throw std::invalid_argument(where + ": '" + s + "' is not an integer");
    return v;
  };
  if (spec.rfind("ddim", 0) == 0) {
    const int want = parse_int(spec.substr(4));
    for (int i = 1; i < T; ++i) {
      if ((T + i - 1) / i == want) {
        std::vector<int> out;
        for (int s = 0; s < T; s += i) out.push_back(s);
        return out;
      }
    }
    throw std::invalid_argument(where + ": cannot create exactly " + std::to_string(want) +
                                " steps with an integer stride");
  }
  std::vector<int> counts;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) counts.push_back(parse_int(item));
  const int n = static_cast<int>(counts.size());
  const int size_per = T / n, extra = T % n;
  int start = 0;
  std::set<int> steps;
  // Python's round() is half-to-even: the default FE_TONEAREST of nearbyint.
  const int old_mode = std::fegetround();
  std::fesetround(FE_TONEAREST);
  for (int i = 0; i < n; ++i) {
    const int size = size_per + (i < extra ? 1 : 0);
    if (counts[static_cast<size_t>(i)] < 1 || counts[static_cast<size_t>(i)] > size) {
      std::fesetround(old_mode);
      throw std::invalid_argument(where + ": cannot divide a section of " + std::to_string(size) + " steps into " +
                                  std::to_string(counts[static_cast<size_t>(i)]));
    }
    const int c = counts[static_cast<size_t>(i)];
    const double frac = c <= 1 ? 1.0 : static_cast<double>(size - 1) / (c - 1);
    double cur = 0.0;
    for (int k = 0; k < c; ++k) {
      steps.insert(start + static_cast<int>(std::nearbyint(cur)));
      cur += frac;
    }
    start += size;
  }
  std::fesetround(old_mode);
  return {steps.begin(), steps.end()};
}

GaussianDiffusion GaussianDiffusion::linear(int T) {
  std::vector<int> map(static_cast<size_t>(T));
  for (int i = 0; i < T; ++i) map[static_cast<size_t>(i)] = i;
  return GaussianDiffusion(linear_beta_schedule(T), map);
}

GaussianDiffusion GaussianDiffusion::respaced(const std::string& spec, int T) {
  const std::vector<double> base = linear_beta_schedule(T);
  const std::vector<int> keep = space_timesteps(T, spec);
  std::vector<double> betas;
  double ac = 1.0, last = 1.0;
  size_t k = 0;
  for (int i = 0; i < T && k < keep.size(); ++i) {
    ac *= 1.0 - base[static_cast<size_t>(i)];
    if (i == keep[k]) {
      betas.push_back(1.0 - ac / last);
      last = ac;
      ++k;
    }
  }
  return GaussianDiffusion(betas, keep);
}

GaussianDiffusion::GaussianDiffusion(std::vector<double> betas, std::vector<int> map)
    : betas_(std::move(betas)), map_(std::move(map)) {
  const size_t n = betas_.size();
  if (n == 0 || map_.size() != n)
    throw std::invalid_argument("GaussianDiffusion: need as many timestep_map entries as betas (" +
                                std::to_string(n) + " betas, " + std::to_string(map_.size()) + " map entries)");
  for (size_t i = 0; i < n; ++i)
    if (!(betas_[i] > 0.0 && betas_[i] <= 1.0))
      throw std::invalid_argument("GaussianDiffusion: beta[" + std::to_string(i) + "] = " +
                                  std::to_string(betas_[i]) + " is outside (0, 1]");
  ac_.resize(n);
  ac_prev_.resize(n);
  post_var_.resize(n);
  post_logvar_.resize(n);
  coef1_.resize(n);
  coef2_.resize(n);
  log_betas_.resize(n);
  double ac = 1.0;
  for (size_t i = 0; i < n; ++i) {
    ac_prev_[i] = ac;
    ac *= 1.0 - betas_[i];
    ac_[i] = ac;
    post_var_[i] = betas_[i] * (1.0 - ac_prev_[i]) / (1.0 - ac_[i]);
    coef1_[i] = betas_[i] * std::sqrt(ac_prev_[i]) / (1.0 - ac_[i]);
    coef2_[i] = (1.0 - ac_prev_[i]) * std::sqrt(1.0 - betas_[i]) / (1.0 - ac_[i]);
    log_betas_[i] = std::log(betas_[i]);
  }
  for (size_t i = 0; i < n; ++i) post_logvar_[i] = std::log(post_var_[i == 0 ? (n > 1 ? 1 : 0) : i]);
  if (n == 1) post_logvar_[0] = log_betas_[0];  // v_0 = 0 and there is no v_1
  schedule_ = Tensor::empty({static_cast<int64_t>(n), kDiffusionCoefs}, DType::I64);
  double* row = f64_data(schedule_);
  for (size_t i = 0; i < n; ++i, row += kDiffusionCoefs) {
    row[kDcAlphaBar] = ac_[i];
    row[kDcAlphaBarPrev] = ac_prev_[i];
    row[kDcCoef1] = coef1_[i];
    row[kDcCoef2] = coef2_[i];
    row[kDcLogBeta] = log_betas_[i];
    row[kDcPostLogVar] = post_logvar_[i];
  }
}

Tensor GaussianDiffusion::schedule_on(Device device) const { return schedule_.to(device); }

void GaussianDiffusion::check_t(const char* fn, const std::vector<int>& t, int64_t B) const {
  if (static_cast<int64_t>(t.size()) != B)
    throw std::invalid_argument(std::string(fn) + ": " + std::to_string(t.size()) + " timesteps for a batch of " +
                                std::to_string(B));
  for (int v : t)
    if (v < 0 || v >= num_steps())
      throw std::invalid_argument(std::string(fn) + ": timestep index " + std::to_string(v) + " outside [0, " +
                                  std::to_string(num_steps()) + ")");
}

void GaussianDiffusion::q_sample(const Tensor& x0, const std::vector<int>& t, const Tensor& noise,
                                 const Tensor& out) const {
  check_cpu("q_sample", "x0", x0);
  if (x0.defined() && x0.dim() >= 1) check_t("q_sample", t, x0.size(0));
  diffusion_q_sample(schedule_, t_tensor(t), x0, noise, out);
}

GaussianDiffusion::Losses GaussianDiffusion::training_losses(const Tensor& model_out, const Tensor& x0,
                                                             const Tensor& x_t, const Tensor& noise,
                                                             const std::vector<int>& t, const Tensor& grad,
                                                             T0Term t0) const {
  check_cpu("training_losses", "model_out", model_out);
  if (model_out.defined() && model_out.dim() >= 1) check_t("training_losses", t, model_out.size(0));
  const int64_t B = static_cast<int64_t>(t.size());
  Tensor stats = Tensor::empty({B, 2}, DType::I64);
  diffusion_training_losses(schedule_, t_tensor(t), model_out, x0, x_t, noise, diffusion_t0(t0), stats, grad);
  return losses_from_stats(f64_data(stats), B);
}

GaussianDiffusion::Losses GaussianDiffusion::losses_from_stats(const double* stats, int64_t B) {
  Losses L;
  L.mse.assign(static_cast<size_t>(B), 0.0);
  L.vb.assign(static_cast<size_t>(B), 0.0);
  L.loss.assign(static_cast<size_t>(B), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    L.mse[static_cast<size_t>(b)] = stats[2 * b];
    L.vb[static_cast<size_t>(b)] = stats[2 * b + 1];
    L.loss[static_cast<size_t>(b)] = L.mse[static_cast<size_t>(b)] + L.vb[static_cast<size_t>(b)];
  }
  for (double l : L.loss) L.mean += l;
  L.mean /= static_cast<double>(B);
  return L;
}

void GaussianDiffusion::p_mean_variance(const Tensor& model_out, const Tensor& x, const std::vector<int>& t,
                                        bool clip, const Tensor& mean, const Tensor& log_variance,
                                        const Tensor& x0_hat) const {
  check_cpu("p_mean_variance", "model_out", model_out);
  if (model_out.defined() && model_out.dim() >= 1) check_t("p_mean_variance", t, model_out.size(0));
  diffusion_p_mean_variance(schedule_, t_tensor(t), model_out, x, clip, mean, log_variance, x0_hat);
}

void GaussianDiffusion::ddpm_step(const Tensor& model_out, const Tensor& x, const std::vector<int>& t,
                                  const Tensor& noise, const Tensor& out, bool clip) const {
  check_cpu("ddpm_step", "model_out", model_out);
  if (model_out.defined() && model_out.dim() >= 1) check_t("ddpm_step", t, model_out.size(0));
  diffusion_ddpm_step(schedule_, t_tensor(t), model_out, x, noise, out, clip);
}

void GaussianDiffusion::ddim_step(const Tensor& model_out, const Tensor& x, const std::vector<int>& t, double eta,
                                  const Tensor& noise, const Tensor& out, bool clip) const {
  check_cpu("ddim_step", "model_out", model_out);
  if (model_out.defined() && model_out.dim() >= 1) check_t("ddim_step", t, model_out.size(0));
  diffusion_ddim_step(schedule_, t_tensor(t), model_out, x, eta, noise, out, clip);
}

void cfg_combine(const Tensor& model_out, double scale, int guided_channels, const Tensor& out) {
  diffusion_cfg_combine(model_out, scale, guided_channels, out);
}

}  // namespace vt
