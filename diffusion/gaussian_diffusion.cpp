#include "diffusion/gaussian_diffusion.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <set>
#include <sstream>
#include <stdexcept>

namespace vt {
namespace {

constexpr double kLn2 = 0.69314718055994530942;

void check_image(const char* fn, const char* name, const Tensor& t, const Shape& want) {
  if (!t.defined() || t.dtype() != DType::F32 || !t.device().is_cpu() || !t.is_contiguous() ||
      t.shape() != want)
    throw std::invalid_argument(std::string(fn) + ": " + name + " must be a contiguous CPU F32 tensor of shape " +
                                shape_str(want) + ", got " + (t.defined() ? t.str() : std::string("undefined")));
}

// [B, 2C, rest...] -> [B, C, rest...]
Shape half_channels(const char* fn, const Tensor& model_out) {
  if (!model_out.defined() || model_out.dim() < 2 || model_out.size(1) % 2 != 0)
    throw std::invalid_argument(std::string(fn) + ": model_out must be [B, 2C, ...] with an even channel count, got " +
                                (model_out.defined() ? shape_str(model_out.shape()) : std::string("undefined")));
  Shape s = model_out.shape();
  s[1] /= 2;
  return s;
}

double approx_std_normal_cdf(double x) {
  return 0.5 * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}
double approx_std_normal_pdf(double x) {  // derivative of the approximation above
  const double k = std::sqrt(2.0 / M_PI);
  const double th = std::tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 - th * th) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// -log p(x0 | mean, exp(log_scale)) of ADM's discretized_gaussian_log_likelihood
// and its derivative with respect to log_scale. torch.clamp(min=1e-12)
// passes no gradient when it clamps, hence the zero derivatives there.
void disc_gauss_nll(double x, double mean, double log_scale, double* nll, double* d_log_scale) {
  const double cx = x - mean, inv = std::exp(-log_scale);
  const double plus_in = inv * (cx + 1.0 / 255.0), min_in = inv * (cx - 1.0 / 255.0);
  const double cdf_plus = approx_std_normal_cdf(plus_in), cdf_min = approx_std_normal_cdf(min_in);
  // d(in)/d(log_scale) = -in.
  const double dplus = approx_std_normal_pdf(plus_in) * -plus_in;
  const double dmin = approx_std_normal_pdf(min_in) * -min_in;
  double lp, dlp;
  if (x < -0.999) {
    const bool clamped = cdf_plus < 1e-12;
    lp = std::log(std::max(cdf_plus, 1e-12));
    dlp = clamped ? 0.0 : dplus / cdf_plus;
  } else if (x > 0.999) {
    const double one_minus = 1.0 - cdf_min;
    const bool clamped = one_minus < 1e-12;
    lp = std::log(std::max(one_minus, 1e-12));
    dlp = clamped ? 0.0 : -dmin / one_minus;
  } else {
    const double delta = cdf_plus - cdf_min;
    const bool clamped = delta < 1e-12;
    lp = std::log(std::max(delta, 1e-12));
    dlp = clamped ? 0.0 : (dplus - dmin) / delta;
  }
  *nll = -lp;
  *d_log_scale = -dlp;
}

}  // namespace

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
}

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
  check_image("q_sample", "x0", x0, x0.shape());
  check_image("q_sample", "noise", noise, x0.shape());
  check_image("q_sample", "out", out, x0.shape());
  const int64_t B = x0.size(0), N = x0.numel() / B;
  check_t("q_sample", t, B);
  const float *a = x0.f32(), *e = noise.f32();
  float* o = out.f32();
  for (int64_t b = 0; b < B; ++b) {
    const double sa = std::sqrt(ac_[static_cast<size_t>(t[static_cast<size_t>(b)])]);
    const double sb = std::sqrt(1.0 - ac_[static_cast<size_t>(t[static_cast<size_t>(b)])]);
    for (int64_t i = b * N; i < (b + 1) * N; ++i) o[i] = static_cast<float>(sa * a[i] + sb * e[i]);
  }
}

GaussianDiffusion::Losses GaussianDiffusion::training_losses(const Tensor& model_out, const Tensor& x0,
                                                             const Tensor& x_t, const Tensor& noise,
                                                             const std::vector<int>& t, const Tensor& grad,
                                                             T0Term t0) const {
  const char* fn = "training_losses";
  const Shape xs = half_channels(fn, model_out);
  check_image(fn, "model_out", model_out, model_out.shape());
  check_image(fn, "x0", x0, xs);
  check_image(fn, "x_t", x_t, xs);
  check_image(fn, "noise", noise, xs);
  if (grad.defined()) check_image(fn, "grad", grad, model_out.shape());
  const int64_t B = xs[0], N = x0.numel() / B;
  check_t(fn, t, B);
  Losses L;
  L.mse.assign(static_cast<size_t>(B), 0.0);
  L.vb.assign(static_cast<size_t>(B), 0.0);
  L.loss.assign(static_cast<size_t>(B), 0.0);
  const float *mo = model_out.f32(), *px0 = x0.f32(), *pxt = x_t.f32(), *pe = noise.f32();
  float* pg = grad.defined() ? grad.f32() : nullptr;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const size_t ti = static_cast<size_t>(t[static_cast<size_t>(b)]);
    const double sr = std::sqrt(1.0 / ac_[ti]), srm1 = std::sqrt(1.0 / ac_[ti] - 1.0);
    const double c1 = coef1_[ti], c2 = coef2_[ti], min_log = post_logvar_[ti], max_log = log_betas_[ti];
    const bool at0 = ti == 0;
    const float* eps_hat = mo + b * 2 * N;
    const float* v = eps_hat + N;
    double mse = 0, vb = 0;
    for (int64_t i = 0; i < N; ++i) {
      const double x0v = px0[b * N + i], xtv = pxt[b * N + i], ev = pe[b * N + i], eh = eps_hat[i];
      mse += (ev - eh) * (ev - eh);
      const double f = (static_cast<double>(v[i]) + 1.0) * 0.5;
      const double lv2 = f * max_log + (1.0 - f) * min_log;
      const double m2 = c1 * (sr * xtv - srm1 * eh) + c2 * xtv;
      double term = 0, dterm_dlv2 = 0;
      if (!at0 || t0 == T0Term::Kl) {
        const double m1 = c1 * x0v + c2 * xtv, lv1 = min_log;
        const double d2 = (m1 - m2) * (m1 - m2) * std::exp(-lv2);
        term = 0.5 * (-1.0 + lv2 - lv1 + std::exp(lv1 - lv2) + d2);
        dterm_dlv2 = 0.5 * (1.0 - std::exp(lv1 - lv2) - d2);
      } else if (t0 == T0Term::Nll) {
        double dls = 0;
        disc_gauss_nll(x0v, m2, 0.5 * lv2, &term, &dls);
        dterm_dlv2 = 0.5 * dls;
      }
      vb += term;
      if (pg) {
        float* g = pg + b * 2 * N;
        g[i] = static_cast<float>(-2.0 * (ev - eh) / (static_cast<double>(N) * B));
        // dlv2/dv = (max_log - min_log) / 2.
        g[N + i] = static_cast<float>(dterm_dlv2 * 0.5 * (max_log - min_log) / (kLn2 * N * B));
      }
    }
    L.mse[static_cast<size_t>(b)] = mse / N;
    L.vb[static_cast<size_t>(b)] = vb / N / kLn2;
    L.loss[static_cast<size_t>(b)] = L.mse[static_cast<size_t>(b)] + L.vb[static_cast<size_t>(b)];
  }
  for (double l : L.loss) L.mean += l;
  L.mean /= static_cast<double>(B);
  return L;
}

void GaussianDiffusion::p_mean_variance(const Tensor& model_out, const Tensor& x, const std::vector<int>& t,
                                        bool clip, const Tensor& mean, const Tensor& log_variance,
                                        const Tensor& x0_hat) const {
  const char* fn = "p_mean_variance";
  const Shape xs = half_channels(fn, model_out);
  check_image(fn, "model_out", model_out, model_out.shape());
  check_image(fn, "x", x, xs);
  if (mean.defined()) check_image(fn, "mean", mean, xs);
  if (log_variance.defined()) check_image(fn, "log_variance", log_variance, xs);
  if (x0_hat.defined()) check_image(fn, "x0_hat", x0_hat, xs);
  const int64_t B = xs[0], N = x.numel() / B;
  check_t(fn, t, B);
  const float *mo = model_out.f32(), *px = x.f32();
  float* pm = mean.defined() ? mean.f32() : nullptr;
  float* pl = log_variance.defined() ? log_variance.f32() : nullptr;
  float* p0 = x0_hat.defined() ? x0_hat.f32() : nullptr;
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const size_t ti = static_cast<size_t>(t[static_cast<size_t>(b)]);
    const double sr = std::sqrt(1.0 / ac_[ti]), srm1 = std::sqrt(1.0 / ac_[ti] - 1.0);
    const float* eh = mo + b * 2 * N;
    const float* v = eh + N;
    for (int64_t i = 0; i < N; ++i) {
      const double xv = px[b * N + i];
      double x0 = sr * xv - srm1 * eh[i];
      if (clip) x0 = std::min(1.0, std::max(-1.0, x0));
      if (p0) p0[b * N + i] = static_cast<float>(x0);
      if (pm) pm[b * N + i] = static_cast<float>(coef1_[ti] * x0 + coef2_[ti] * xv);
      if (pl) {
        const double f = (static_cast<double>(v[i]) + 1.0) * 0.5;
        pl[b * N + i] = static_cast<float>(f * log_betas_[ti] + (1.0 - f) * post_logvar_[ti]);
      }
    }
  }
}

void GaussianDiffusion::ddpm_step(const Tensor& model_out, const Tensor& x, const std::vector<int>& t,
                                  const Tensor& noise, const Tensor& out, bool clip) const {
  const char* fn = "ddpm_step";
  const Shape xs = half_channels(fn, model_out);
  check_image(fn, "model_out", model_out, model_out.shape());
  check_image(fn, "x", x, xs);
  check_image(fn, "noise", noise, xs);
  check_image(fn, "out", out, xs);
  const int64_t B = xs[0], N = x.numel() / B;
  check_t(fn, t, B);
  const float *mo = model_out.f32(), *px = x.f32(), *pz = noise.f32();
  float* po = out.f32();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const size_t ti = static_cast<size_t>(t[static_cast<size_t>(b)]);
    const double sr = std::sqrt(1.0 / ac_[ti]), srm1 = std::sqrt(1.0 / ac_[ti] - 1.0);
    const double nonzero = ti == 0 ? 0.0 : 1.0;
    const float* eh = mo + b * 2 * N;
    const float* v = eh + N;
    for (int64_t i = 0; i < N; ++i) {
      const double xv = px[b * N + i];
      double x0 = sr * xv - srm1 * eh[i];
      if (clip) x0 = std::min(1.0, std::max(-1.0, x0));
      const double m = coef1_[ti] * x0 + coef2_[ti] * xv;
      const double f = (static_cast<double>(v[i]) + 1.0) * 0.5;
      const double lv = f * log_betas_[ti] + (1.0 - f) * post_logvar_[ti];
      po[b * N + i] = static_cast<float>(m + nonzero * std::exp(0.5 * lv) * pz[b * N + i]);
    }
  }
}

void GaussianDiffusion::ddim_step(const Tensor& model_out, const Tensor& x, const std::vector<int>& t, double eta,
                                  const Tensor& noise, const Tensor& out, bool clip) const {
  const char* fn = "ddim_step";
  const Shape xs = half_channels(fn, model_out);
  check_image(fn, "model_out", model_out, model_out.shape());
  check_image(fn, "x", x, xs);
  if (eta != 0.0 || noise.defined()) check_image(fn, "noise", noise, xs);
  check_image(fn, "out", out, xs);
  if (eta < 0) throw std::invalid_argument("ddim_step: eta must be >= 0, got " + std::to_string(eta));
  const int64_t B = xs[0], N = x.numel() / B;
  check_t(fn, t, B);
  const float *mo = model_out.f32(), *px = x.f32();
  const float* pz = noise.defined() ? noise.f32() : nullptr;
  float* po = out.f32();
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const size_t ti = static_cast<size_t>(t[static_cast<size_t>(b)]);
    const double ab = ac_[ti], abp = ac_prev_[ti];
    const double sr = std::sqrt(1.0 / ab), srm1 = std::sqrt(1.0 / ab - 1.0);
    const double sigma = eta * std::sqrt((1.0 - abp) / (1.0 - ab)) * std::sqrt(1.0 - ab / abp);
    const double dir = std::sqrt(std::max(0.0, 1.0 - abp - sigma * sigma));
    const double nz = ti == 0 ? 0.0 : sigma;
    const float* eh = mo + b * 2 * N;
    for (int64_t i = 0; i < N; ++i) {
      const double xv = px[b * N + i];
      double x0 = sr * xv - srm1 * eh[i];
      if (clip) x0 = std::min(1.0, std::max(-1.0, x0));
      const double eps = (sr * xv - x0) / srm1;
      double o = x0 * std::sqrt(abp) + dir * eps;
      if (pz && nz != 0.0) o += nz * pz[b * N + i];
      po[b * N + i] = static_cast<float>(o);
    }
  }
}

void cfg_combine(const Tensor& model_out, double scale, int guided_channels, const Tensor& out) {
  const char* fn = "cfg_combine";
  if (!model_out.defined() || model_out.dim() < 2 || model_out.size(0) % 2 != 0 || model_out.size(1) % 2 != 0)
    throw std::invalid_argument(std::string(fn) + ": model_out must be [2B, 2C, ...], got " +
                                (model_out.defined() ? shape_str(model_out.shape()) : std::string("undefined")));
  check_image(fn, "model_out", model_out, model_out.shape());
  Shape os = model_out.shape();
  os[0] /= 2;
  check_image(fn, "out", out, os);
  const int64_t B = os[0], C2 = os[1], C = C2 / 2, S = out.numel() / (B * C2);
  const int64_t g = guided_channels < 0 ? C : guided_channels;
  if (g > C)
    throw std::invalid_argument(std::string(fn) + ": guided_channels " + std::to_string(g) + " exceeds the " +
                                std::to_string(C) + " noise channels");
  const float* cond = model_out.f32();
  const float* unc = cond + B * C2 * S;
  float* o = out.f32();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C2; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = (b * C2 + c) * S + s;
        o[i] = c < g ? static_cast<float>(unc[i] + scale * (static_cast<double>(cond[i]) - unc[i])) : cond[i];
      }
}

}  // namespace vt
