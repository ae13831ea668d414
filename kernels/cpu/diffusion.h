// CPU twins of the diffusion ops of kernels/diffusion.h on raw pointers: fp32
// images, float64 schedule rows (kDiffusionCoefs per step) and stats, int32
// step indices (already range-checked). Per-element math is
// kernels/diffusion_math.h; per-sample sums run in element order in float64.
#pragma once
#include <cstdint>

#include "kernels/diffusion_math.h"

namespace vt {
namespace cpu {

// Row r: stream(r) as kernels/diffusion.h (NoiseRows) describes it.
void gaussian_noise(float* out, int64_t B, int64_t N, uint64_t seed, uint64_t purpose, uint64_t key, bool row_last,
                    int64_t offset, int64_t stride);

void diffusion_q_sample(const double* sched, const int32_t* t, const float* x0, const float* noise, float* out,
                        int64_t B, int64_t N);

void diffusion_loss_means(const double* stats, int64_t B, float* out);

// model_out [B, 2N]; stats [B, 2]; grad [B, 2N] or nullptr.

void diffusion_training_losses(const double* sched, const int32_t* t, const float* model_out, const float* x0,
                               const float* x_t, const float* noise, DiffusionT0 t0, double* stats, float* grad,
                               int64_t B, int64_t N);

// mean, log_variance, x0_hat may each be nullptr.
void diffusion_p_mean_variance(const double* sched, const int32_t* t, const float* model_out, const float* x,
                               bool clip, float* mean, float* log_variance, float* x0_hat, int64_t B, int64_t N);

void diffusion_ddpm_step(const double* sched, const int32_t* t, const float* model_out, const float* x,
                         const float* noise, float* out, bool clip, int64_t B, int64_t N);

// noise may be nullptr (no noise term).
void diffusion_ddim_step(const double* sched, const int32_t* t, const float* model_out, const float* x, double eta,
                         const float* noise, float* out, bool clip, int64_t B, int64_t N);

// model_out [2B, C2, S], out [B, C2, S]; channels c < guided are guided.
void diffusion_cfg_combine(const float* model_out, double scale, int64_t guided, float* out, int64_t B, int64_t C2,
                           int64_t S);

}  // namespace cpu
}  // namespace vt
