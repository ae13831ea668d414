// DiT's Gaussian diffusion as device-dispatched ops (facebookresearch/DiT
// diffusion/gaussian_diffusion.py, respace.py, diffusion_utils.py; OpenAI
// improved-diffusion / ADM): Gaussian noise from Philox, q_sample, the
// learned-sigma training loss (MSE + VB) and its gradient, p_mean_variance,
// the DDPM and DDIM reverse steps and classifier-free guidance. Each op takes
// Tensors on one device (CPU or CUDA) and runs the CPU twin
// (kernels/cpu/diffusion.h) or the CUDA twin (kernels/cuda/diffusion.h); both
// evaluate the float64 expressions of kernels/diffusion_math.h.
// diffusion/gaussian_diffusion.h builds the schedule and is the user-facing API.
//
// Shapes: image-like tensors are [B, C, ...] ("the sample" is everything
// after dim 0, N elements); model_out is [B, 2C, ...] = [eps_hat ; v].
// Dtypes: images, noise and outputs F32; model_out and grad F32, or BF16 on
// CUDA (both the same); arithmetic in float64 on both devices.
//   schedule: I64 [K, kDiffusionCoefs] holding float64 bit patterns (vt's
//             Tensor has no F64 dtype; f64_data() reads it), one row per
//             (respaced) step, columns as DiffusionCoef names them.
//   t:        I32 [B], step indices into the schedule (0 .. K-1). Checked on
//             the CPU; on CUDA an index outside [0, K) makes that sample's
//             outputs NaN (no host synchronisation to check it).
//   stats:    I64 [B, 2] holding float64 (mse_b, vb_b): the per-sample mean
//             squared noise error and the VB term in bits per dim.
// Errors: std::invalid_argument naming the op and the tensor.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "kernels/diffusion_math.h"

namespace vt {

// float64 view of an I64 tensor used as float64 storage (schedule, stats).
double* f64_data(const Tensor& t);

// Which Philox stream row r of a noise tensor draws from: with g = offset +
// r * stride (the global sample index; data-parallel ranks pass offset =
// rank, stride = world), the stream is philox_stream(purpose, key, g) when
// row_last, else philox_stream(purpose, g, key).
struct NoiseRows {
  uint64_t purpose = 0;
  uint64_t key = 0;
  bool row_last = true;
  int64_t offset = 0, stride = 1;
};

// out [B, ...] F32: element i of row r is the i-th normal() of
// vt::Philox(seed, stream(r)) (Box-Muller, one Philox block per element), so
// CPU and CUDA draw the same noise (core/philox_block.h notes the device's
// possible last-ulp difference of log/cos).
void gaussian_noise(uint64_t seed, const NoiseRows& rows, const Tensor& out);

// out = sqrt(abar_t) x0 + sqrt(1 - abar_t) noise; x0, noise, out F32 [B, ...].
void diffusion_q_sample(const Tensor& schedule, const Tensor& t, const Tensor& x0, const Tensor& noise,
                        const Tensor& out);

// DiT training_losses (learned sigma, MSE loss type): stats per sample, and
// when grad is defined ([B, 2C, ...], overwritten) the gradient of
// mean_b(mse_b + vb_b) with respect to model_out (the eps channels get only
// the MSE gradient; the VB term sees eps_hat detached).
void diffusion_training_losses(const Tensor& schedule, const Tensor& t, const Tensor& model_out, const Tensor& x0,
                               const Tensor& x_t, const Tensor& noise, DiffusionT0 t0, const Tensor& stats,
                               const Tensor& grad);

// The step's scalars of a GPU training step, left on the device for the
// deferred read (train/loop.h): out F32 [3] = (mean over rows of mse + vb,
// mean mse, mean vb) of stats I64 [B, 2] (float64; summed in double, in row
// order, then rounded to fp32).
void diffusion_loss_means(const Tensor& stats, const Tensor& out);

// p(x_{t-1} | x_t): mean, log variance and x0_hat ([B, C, ...] F32 each,
// undefined to skip; overwritten).
void diffusion_p_mean_variance(const Tensor& schedule, const Tensor& t, const Tensor& model_out, const Tensor& x,
                               bool clip_denoised, const Tensor& mean, const Tensor& log_variance,
                               const Tensor& x0_hat);

// out = mean + [t != 0] exp(0.5 log var) noise.
void diffusion_ddpm_step(const Tensor& schedule, const Tensor& t, const Tensor& model_out, const Tensor& x,
                         const Tensor& noise, const Tensor& out, bool clip_denoised);

// One DDIM step with eta >= 0 (noise may be undefined when eta == 0).
void diffusion_ddim_step(const Tensor& schedule, const Tensor& t, const Tensor& model_out, const Tensor& x,
                         double eta, const Tensor& noise, const Tensor& out, bool clip_denoised);

// Classifier-free guidance (DiT forward_with_cfg): model_out [2B, 2C, ...]
// (conditional rows first), out [B, 2C, ...]; channels c < guided_channels
// (-1: all C noise channels) get u + scale (cond - u), the others the
// conditional values. model_out and out F32, or BF16 on CUDA (the same).
void diffusion_cfg_combine(const Tensor& model_out, double scale, int guided_channels, const Tensor& out);

}  // namespace vt
