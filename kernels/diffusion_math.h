// The per-element math of DiT's Gaussian diffusion (facebookresearch/DiT
// diffusion/gaussian_diffusion.py and diffusion_utils.py, from OpenAI's
// improved-diffusion / ADM), shared by the CPU twin (kernels/cpu/diffusion.cpp)
// and the CUDA twin (kernels/cuda/diffusion.cu) of kernels/diffusion.h, so
// both evaluate the same expressions in the same order. All arithmetic is
// float64; inputs and outputs are fp32 (or bf16 model outputs on CUDA).
//
// A schedule is a table of kDiffusionCoefs doubles per (respaced) step,
// laid out as DiffusionCoef names them; diffusion/gaussian_diffusion.cpp
// fills it from the float64 betas.
#pragma once
#include <math.h>

#include <cstdint>

#include "core/philox_block.h"  // VT_HOST_DEVICE

namespace vt {

enum DiffusionCoef : int {
  kDcAlphaBar = 0,      // alphas_cumprod[t]
  kDcAlphaBarPrev = 1,  // alphas_cumprod_prev[t]
  kDcCoef1 = 2,         // posterior_mean_coef1[t]
  kDcCoef2 = 3,         // posterior_mean_coef2[t]
  kDcLogBeta = 4,       // log(beta[t])  (the max log variance)
  kDcPostLogVar = 5,    // posterior_log_variance_clipped[t]  (the min log variance)
  kDiffusionCoefs = 6
};

// What the VB term is at t = 0; see diffusion/gaussian_diffusion.h (T0Term).
enum class DiffusionT0 : int { Nll = 0, Kl = 1, Zero = 2 };

namespace dmath {

constexpr double kLn2 = 0.69314718055994530942;

// std::max / std::min's exact selection rules (NaN handling included), for
// code that must also compile for the device.
VT_HOST_DEVICE inline double max_of(double a, double b) { return (a < b) ? b : a; }
VT_HOST_DEVICE inline double min_of(double a, double b) { return (b < a) ? b : a; }

// ADM's approx_standard_normal_cdf and the derivative of that approximation.
VT_HOST_DEVICE inline double approx_std_normal_cdf(double x) {
  return 0.5 * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
}
VT_HOST_DEVICE inline double approx_std_normal_pdf(double x) {
  const double k = sqrt(2.0 / 3.14159265358979323846);
  const double th = tanh(k * (x + 0.044715 * x * x * x));
  return 0.5 * (1.0 - th * th) * k * (1.0 + 3.0 * 0.044715 * x * x);
}

// -log p(x0 | mean, exp(log_scale)) of ADM's discretized_gaussian_log_likelihood
// (8-bit bins of half-width 1/255, open edge bins beyond +-0.999) and its
// derivative with respect to log_scale. torch.clamp(min=1e-12) passes no
// gradient where it clamps, hence the zero derivatives there.
VT_HOST_DEVICE inline void disc_gauss_nll(double x, double mean, double log_scale, double* nll,
                                          double* d_log_scale) {
  const double cx = x - mean, inv = exp(-log_scale);
  const double plus_in = inv * (cx + 1.0 / 255.0), min_in = inv * (cx - 1.0 / 255.0);
  const double cdf_plus = approx_std_normal_cdf(plus_in), cdf_min = approx_std_normal_cdf(min_in);
  // d(in)/d(log_scale) = -in.
  const double dplus = approx_std_normal_pdf(plus_in) * -plus_in;
  const double dmin = approx_std_normal_pdf(min_in) * -min_in;
  double lp, dlp;
  if (x < -0.999) {
    const bool clamped = cdf_plus < 1e-12;
    lp = log(max_of(cdf_plus, 1e-12));
    dlp = clamped ? 0.0 : dplus / cdf_plus;
  } else if (x > 0.999) {
    const double one_minus = 1.0 - cdf_min;
    const bool clamped = one_minus < 1e-12;
    lp = log(max_of(one_minus, 1e-12));
    dlp = clamped ? 0.0 : -dmin / one_minus;
  } else {
    const double delta = cdf_plus - cdf_min;
    const bool clamped = delta < 1e-12;
    lp = log(max_of(delta, 1e-12));
    dlp = clamped ? 0.0 : (dplus - dmin) / delta;
  }
  *nll = -lp;
  *d_log_scale = -dlp;
}

// x_t = sqrt(abar) x0 + sqrt(1 - abar) noise, per element.
VT_HOST_DEVICE inline float q_sample(const double* c, float x0, float noise) {
  const double sa = sqrt(c[kDcAlphaBar]), sb = sqrt(1.0 - c[kDcAlphaBar]);
  return static_cast<float>(sa * x0 + sb * noise);
}

// x0_hat = sqrt(1/abar) x - sqrt(1/abar - 1) eps_hat, clipped to [-1, 1] when asked.
VT_HOST_DEVICE inline double pred_x0(const double* c, double x, double eps_hat, bool clip) {
  const double sr = sqrt(1.0 / c[kDcAlphaBar]), srm1 = sqrt(1.0 / c[kDcAlphaBar] - 1.0);
  double x0 = sr * x - srm1 * eps_hat;
  if (clip) x0 = min_of(1.0, max_of(-1.0, x0));
  return x0;
}

// The learned-range log variance: f log beta + (1 - f) log v_clipped, f = (v + 1) / 2.
VT_HOST_DEVICE inline double model_log_variance(const double* c, double v) {
  const double f = (v + 1.0) * 0.5;
  return f * c[kDcLogBeta] + (1.0 - f) * c[kDcPostLogVar];
}

// One element of DiT's training_losses (learned sigma, MSE): the squared
// noise error, the VB term in nats (posterior KL for t > 0, the t0 term at
// t = 0; p uses eps_hat detached) and the gradients of the batch-mean loss
// mean_b(mse_b + vb_b / ln 2) with respect to eps_hat and v, for a batch of
// B samples of N elements each.
struct LossElem {
  double sq, vb, g_eps, g_v;
};
VT_HOST_DEVICE inline LossElem loss_elem(const double* c, bool at0, DiffusionT0 t0, double x0v, double xtv,
                                         double ev, double eh, double vv, int64_t N, int64_t B) {
  const double sr = sqrt(1.0 / c[kDcAlphaBar]), srm1 = sqrt(1.0 / c[kDcAlphaBar] - 1.0);
  const double c1 = c[kDcCoef1], c2 = c[kDcCoef2], min_log = c[kDcPostLogVar], max_log = c[kDcLogBeta];
  LossElem r;
  r.sq = (ev - eh) * (ev - eh);
  const double f = (vv + 1.0) * 0.5;
  const double lv2 = f * max_log + (1.0 - f) * min_log;
  const double m2 = c1 * (sr * xtv - srm1 * eh) + c2 * xtv;
  double term = 0, dterm_dlv2 = 0;
  if (!at0 || t0 == DiffusionT0::Kl) {
    const double m1 = c1 * x0v + c2 * xtv, lv1 = min_log;
    const double d2 = (m1 - m2) * (m1 - m2) * exp(-lv2);
    term = 0.5 * (-1.0 + lv2 - lv1 + exp(lv1 - lv2) + d2);
    dterm_dlv2 = 0.5 * (1.0 - exp(lv1 - lv2) - d2);
  } else if (t0 == DiffusionT0::Nll) {
    double dls = 0;
    disc_gauss_nll(x0v, m2, 0.5 * lv2, &term, &dls);
    dterm_dlv2 = 0.5 * dls;
  }
  r.vb = term;
  r.g_eps = -2.0 * (ev - eh) / (static_cast<double>(N) * B);
  // dlv2/dv = (max_log - min_log) / 2.
  r.g_v = dterm_dlv2 * 0.5 * (max_log - min_log) / (kLn2 * N * B);
  return r;
}

// One ancestral (DDPM) step: mean + [t != 0] exp(0.5 log var) z.
VT_HOST_DEVICE inline float ddpm_elem(const double* c, bool at0, double x, double eh, double v, double z, bool clip) {
  const double nonzero = at0 ? 0.0 : 1.0;
  const double x0 = pred_x0(c, x, eh, clip);
  const double m = c[kDcCoef1] * x0 + c[kDcCoef2] * x;
  const double lv = model_log_variance(c, v);
  return static_cast<float>(m + nonzero * exp(0.5 * lv) * z);
}

// DDIM's per-sample scalars for eta: sigma and the direction coefficient.
struct DdimScalars {
  double sigma, dir;
};
VT_HOST_DEVICE inline DdimScalars ddim_scalars(const double* c, double eta) {
  const double ab = c[kDcAlphaBar], abp = c[kDcAlphaBarPrev];
  DdimScalars s;
  s.sigma = eta * sqrt((1.0 - abp) / (1.0 - ab)) * sqrt(1.0 - ab / abp);
  s.dir = sqrt(max_of(0.0, 1.0 - abp - s.sigma * s.sigma));
  return s;
}
// One DDIM step; z may be ignored (has_noise false) when the step adds no noise.
VT_HOST_DEVICE inline float ddim_elem(const double* c, const DdimScalars& s, bool at0, double x, double eh, double z,
                                      bool has_noise, bool clip) {
  const double sr = sqrt(1.0 / c[kDcAlphaBar]), srm1 = sqrt(1.0 / c[kDcAlphaBar] - 1.0);
  const double nz = at0 ? 0.0 : s.sigma;
  const double x0 = pred_x0(c, x, eh, clip);
  const double eps = (sr * x - x0) / srm1;
  double o = x0 * sqrt(c[kDcAlphaBarPrev]) + s.dir * eps;
  if (has_noise && nz != 0.0) o += nz * z;
  return static_cast<float>(o);
}

// Classifier-free guidance on one guided element: u + scale (cond - u).
VT_HOST_DEVICE inline float cfg_elem(float cond, float unc, double scale) {
  return static_cast<float>(unc + scale * (static_cast<double>(cond) - unc));
}

// The step's means of the per-sample terms (stats: B rows of mse, vb), as
// GaussianDiffusion::losses_from_stats and dittrain sum them: the loss
// mean_b(mse_b + vb_b), mean mse and mean vb, in row order.
VT_HOST_DEVICE inline void loss_means(const double* stats, int64_t B, double* loss, double* mse, double* vb) {
  double l = 0, m = 0, v = 0;
  for (int64_t b = 0; b < B; ++b) l += stats[2 * b] + stats[2 * b + 1];
  for (int64_t b = 0; b < B; ++b) m += stats[2 * b], v += stats[2 * b + 1];
  *loss = l / static_cast<double>(B);
  *mse = m / static_cast<double>(B);
  *vb = v / static_cast<double>(B);
}

}  // namespace dmath
}  // namespace vt
