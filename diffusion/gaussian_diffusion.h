// Gaussian diffusion of DiT (docs/recipes.md §8), following the DiT repository's
// diffusion package (facebookresearch/DiT: diffusion/gaussian_diffusion.py,
// respace.py, diffusion_utils.py), itself from OpenAI's improved-diffusion /
// ADM: linear betas, T = 1000, epsilon prediction with learned-range
// variance (ModelVarType.LEARNED_RANGE, LossType.MSE).
//
// Schedules are float64; per-element arithmetic runs in double on fp32
// tensors. The per-element work is the device-dispatched op family
// kernels/diffusion.h (CPU and CUDA twins); the methods below are its CPU
// entry points with host step indices, and schedule_on() hands the same
// table to device callers. Image-like tensors are F32 CPU contiguous [B, C, H, W] (any
// trailing shape: everything after dim 0 is "the sample"); the model output
// has 2C channels: [eps_hat (C) ; v (C)] with v in about [-1, 1].
//
// Timesteps passed to the functions below are INDICES into this diffusion's
// (possibly respaced) schedule, 0 .. num_steps()-1; the model must be fed
// timestep_map()[index] (the original timestep), as DiT's _WrappedModel does.
//
// Errors: std::invalid_argument naming the function and the tensor/shape or
// the bad respacing string.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/diffusion_math.h"

namespace vt {

// What the VB term is at t = 0 (the config key diffusion.t0_term).
//   Nll : DiT/ADM: negative discretised Gaussian log-likelihood of x0 with
//         8-bit bins (half-width 1/255) and open edge bins at +-0.999, in
//         bits per dim. Assumes x0 are pixels mapped to [-1, 1]; on VAE
//         latents (unbounded, not quantised) it is a mis-specified
//         likelihood: values beyond +-0.999 fall into the open edge bins and
//         the bin width means nothing, so it only trains the variance output
//         at t = 0 towards a "bin-sized" scale. DiT uses it on latents anyway.
//   Kl  : the same posterior KL as for t > 0 (with the clipped log variance).
//   Zero: no VB term at t = 0 (MSE only).
enum class T0Term { Nll, Kl, Zero };
T0Term t0_term_from_name(const std::string& s);  // "nll" | "kl" | "zero"

// DiT's get_named_beta_schedule("linear", 1000) with scale 1000/T:
// linspace(scale*1e-4, scale*0.02, T) in float64.
std::vector<double> linear_beta_schedule(int num_timesteps = 1000);

// DiT respace.space_timesteps: the kept timesteps, sorted ascending.
//   "ddimN"   : range(0, T, i) for the first stride i giving N steps
//   "N" or "N1,N2,...": T split into equal sections, section k keeps Nk
//               steps at round(j * (size-1)/(Nk-1)) (accumulated as DiT
//               does, Python round-half-even); N in 1..section size.
//   ""        : all T steps.
// Every count from 1 to T yields exactly that many distinct steps.
std::vector<int> space_timesteps(int num_timesteps, const std::string& spec);

class GaussianDiffusion {
 public:
  // The full T-step linear schedule.
  static GaussianDiffusion linear(int num_timesteps = 1000);
  // The linear schedule respaced to space_timesteps(T, spec); betas over the
  // kept steps are 1 - abar_i / abar_prev_kept, so alpha-bar is reproduced
  // exactly at every kept step.
  static GaussianDiffusion respaced(const std::string& spec, int num_timesteps = 1000);
  // From explicit betas (in (0, 1)) and the original timestep of each.
  GaussianDiffusion(std::vector<double> betas, std::vector<int> timestep_map);

  int num_steps() const { return static_cast<int>(betas_.size()); }
  const std::vector<int>& timestep_map() const { return map_; }
  const std::vector<double>& betas() const { return betas_; }
  const std::vector<double>& alphas_cumprod() const { return ac_; }
  const std::vector<double>& alphas_cumprod_prev() const { return ac_prev_; }
  const std::vector<double>& posterior_variance() const { return post_var_; }
  // log of posterior_variance with index 0 replaced by index 1 (ADM's
  // "clipped"); a one-step schedule uses log(beta_0).
  const std::vector<double>& posterior_log_variance_clipped() const { return post_logvar_; }
  const std::vector<double>& posterior_mean_coef1() const { return coef1_; }
  const std::vector<double>& posterior_mean_coef2() const { return coef2_; }
  // The per-step coefficient table of kernels/diffusion.h (I64 [K,
  // kDiffusionCoefs] holding float64) on the CPU, or copied to `device`.
  const Tensor& schedule() const { return schedule_; }
  Tensor schedule_on(Device device) const;

  // x_t = sqrt(abar_t) x0 + sqrt(1 - abar_t) noise. x0, noise, out same
  // shape [B, ...]; t has B indices.
  void q_sample(const Tensor& x0, const std::vector<int>& t, const Tensor& noise, const Tensor& out) const;

  struct Losses {
    std::vector<double> mse, vb, loss;  // per sample
    double mean = 0;                    // mean over the batch of loss (what is minimised)
  };
  // DiT training_losses for learned sigma: model_out [B, 2C, ...] evaluated
  // at (x_t, timestep_map[t]), x0 / x_t / noise [B, C, ...].
  //   mse_b = mean_dims (noise - eps_hat)^2
  //   vb_b  = mean_dims KL(q(x_{t-1}|x_t,x0) || p(x_{t-1}|x_t)) / ln 2 (t > 0),
  //           the t0 term for t = 0; p uses eps_hat DETACHED.
  // When grad is defined ([B, 2C, ...]) it receives d(mean)/d(model_out)
  // (OVERWRITTEN): the eps channels get only the MSE gradient.
  Losses training_losses(const Tensor& model_out, const Tensor& x0, const Tensor& x_t, const Tensor& noise,
                         const std::vector<int>& t, const Tensor& grad = Tensor(),
                         T0Term t0 = T0Term::Nll) const;
  // Losses from the per-sample stats the kernel writes ([B, 2] float64:
  // mse_b, vb_b), e.g. after copying a device's stats to the host.
  static Losses losses_from_stats(const double* stats, int64_t B);

  // p(x_{t-1} | x_t) of the model: x0_hat = sqrt(1/abar) x - sqrt(1/abar - 1) eps_hat
  // (clipped to [-1, 1] when clip_denoised), mean = coef1 x0_hat + coef2 x,
  // log var = f log beta + (1 - f) log v_clipped, f = (v + 1) / 2.
  // Outputs (each [B, C, ...], undefined to skip) overwrite.
  void p_mean_variance(const Tensor& model_out, const Tensor& x, const std::vector<int>& t, bool clip_denoised,
                       const Tensor& mean, const Tensor& log_variance, const Tensor& x0_hat) const;

  // One ancestral step: out = mean + [t != 0] exp(0.5 log var) noise.
  void ddpm_step(const Tensor& model_out, const Tensor& x, const std::vector<int>& t, const Tensor& noise,
                 const Tensor& out, bool clip_denoised = false) const;
  // One DDIM step (eta): eps = (sqrt(1/abar) x - x0_hat) / sqrt(1/abar - 1),
  // sigma = eta sqrt((1-abar_prev)/(1-abar)) sqrt(1 - abar/abar_prev),
  // out = x0_hat sqrt(abar_prev) + sqrt(1 - abar_prev - sigma^2) eps + [t != 0] sigma noise.
  // noise may be undefined when eta == 0.
  void ddim_step(const Tensor& model_out, const Tensor& x, const std::vector<int>& t, double eta,
                 const Tensor& noise, const Tensor& out, bool clip_denoised = false) const;

 private:
  void check_t(const char* fn, const std::vector<int>& t, int64_t B) const;
  std::vector<double> betas_, ac_, ac_prev_, post_var_, post_logvar_, coef1_, coef2_, log_betas_;
  std::vector<int> map_;
  Tensor schedule_;  // I64 [K, kDiffusionCoefs] float64 bits, CPU
};

// The kernel family's t0 selector for a T0Term.
DiffusionT0 diffusion_t0(T0Term t0);

// Classifier-free guidance (DiT forward_with_cfg). model_out [2B, 2C, ...]
// holds the conditional rows first, then the unconditional ones. For noise
// channels c < guided_channels: out = u + scale (cond - u); all other
// channels (the rest of the noise channels with DiT's 3-channel behaviour,
// and always the learned-variance channels C..2C-1) are the conditional
// rows' values. guided_channels = -1 means all C noise channels (vtrain's
// default); DiT uses 3. out [B, 2C, ...].
void cfg_combine(const Tensor& model_out, double scale, int guided_channels, const Tensor& out);

}  // namespace vt
