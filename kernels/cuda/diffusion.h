// CUDA twins of kernels/cpu/diffusion.h, behind kernels/diffusion.h. Same
// contract and the same float64 element math (kernels/diffusion_math.h);
// images, noise and outputs fp32; model_out and grad in `io` (F32 or BF16).
// sched is the device copy of the [K, kDiffusionCoefs] float64 table; a step
// index outside [0, K) turns that sample's outputs (and stats) into NaN.
// Per-sample loss sums are block reductions in float64 (a different order
// than the CPU's sequential sum: equal up to float64 rounding).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"
#include "kernels/diffusion_math.h"

namespace vt {
namespace cuda {

void gaussian_noise(float* out, int64_t B, int64_t N, uint64_t seed, uint64_t purpose, uint64_t key, bool row_last,
                    int64_t offset, int64_t stride, cudaStream_t stream = 0);

void diffusion_q_sample(const double* sched, int64_t K, const int32_t* t, const float* x0, const float* noise,
                        float* out, int64_t B, int64_t N, cudaStream_t stream = 0);

void diffusion_training_losses(const double* sched, int64_t K, const int32_t* t, const void* model_out,
                               const float* x0, const float* x_t, const float* noise, DiffusionT0 t0, double* stats,
                               void* grad, int64_t B, int64_t N, DType io, cudaStream_t stream = 0);

// kernels/diffusion.h's diffusion_loss_means: one thread (B is a batch).
void diffusion_loss_means(const double* stats, int64_t B, float* out, cudaStream_t stream = 0);

void diffusion_p_mean_variance(const double* sched, int64_t K, const int32_t* t, const void* model_out,
                               const float* x, bool clip, float* mean, float* log_variance, float* x0_hat, int64_t B,
                               int64_t N, DType io, cudaStream_t stream = 0);

void diffusion_ddpm_step(const double* sched, int64_t K, const int32_t* t, const void* model_out, const float* x,
                         const float* noise, float* out, bool clip, int64_t B, int64_t N, DType io,
                         cudaStream_t stream = 0);

void diffusion_ddim_step(const double* sched, int64_t K, const int32_t* t, const void* model_out, const float* x,
                         double eta, const float* noise, float* out, bool clip, int64_t B, int64_t N, DType io,
                         cudaStream_t stream = 0);

void diffusion_cfg_combine(const void* model_out, double scale, int64_t guided, void* out, int64_t B, int64_t C2,
                           int64_t S, DType io, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
