#include "kernels/cpu/diffusion.h"

#include "core/philox_block.h"

namespace vt {
namespace cpu {

void gaussian_noise(float* out, int64_t B, int64_t N, uint64_t seed, uint64_t purpose, uint64_t key, bool row_last,
                    int64_t offset, int64_t stride) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < B; ++r) {
    const uint64_t g = static_cast<uint64_t>(offset + r * stride);
    const uint64_t stream = row_last ? philox_stream_mix(purpose, key, g) : philox_stream_mix(purpose, g, key);
    float* z = out + r * N;
    for (int64_t i = 0; i < N; ++i) z[i] = static_cast<float>(philox_normal(seed, stream, static_cast<uint64_t>(i)));
  }
}

void diffusion_q_sample(const double* sched, const int32_t* t, const float* x0, const float* noise, float* out,
                        int64_t B, int64_t N) {
  for (int64_t b = 0; b < B; ++b) {
    const double* c = sched + static_cast<int64_t>(t[b]) * kDiffusionCoefs;
    for (int64_t i = b * N; i < (b + 1) * N; ++i) out[i] = dmath::q_sample(c, x0[i], noise[i]);
  }
}

void diffusion_training_losses(const double* sched, const int32_t* t, const float* model_out, const float* x0,
                               const float* x_t, const float* noise, DiffusionT0 t0, double* stats, float* grad,
                               int64_t B, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const double* c = sched + static_cast<int64_t>(t[b]) * kDiffusionCoefs;
    const bool at0 = t[b] == 0;
    const float* eps_hat = model_out + b * 2 * N;
    const float* v = eps_hat + N;
    double mse = 0, vb = 0;
    for (int64_t i = 0; i < N; ++i) {
      const dmath::LossElem e =
          dmath::loss_elem(c, at0, t0, x0[b * N + i], x_t[b * N + i], noise[b * N + i], eps_hat[i], v[i], N, B);
      mse += e.sq;
      vb += e.vb;
      if (grad) {
        float* g = grad + b * 2 * N;
        g[i] = static_cast<float>(e.g_eps);
        g[N + i] = static_cast<float>(e.g_v);
      }
    }
    stats[2 * b] = mse / N;
    stats[2 * b + 1] = vb / N / dmath::kLn2;
  }
}

void diffusion_p_mean_variance(const double* sched, const int32_t* t, const float* model_out, const float* x,
                               bool clip, float* mean, float* log_variance, float* x0_hat, int64_t B, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const double* c = sched + static_cast<int64_t>(t[b]) * kDiffusionCoefs;
    const float* eh = model_out + b * 2 * N;
    const float* v = eh + N;
    for (int64_t i = 0; i < N; ++i) {
      const double xv = x[b * N + i];
      const double x0 = dmath::pred_x0(c, xv, eh[i], clip);
      if (x0_hat) x0_hat[b * N + i] = static_cast<float>(x0);
      if (mean) mean[b * N + i] = static_cast<float>(c[kDcCoef1] * x0 + c[kDcCoef2] * xv);
      if (log_variance) log_variance[b * N + i] = static_cast<float>(dmath::model_log_variance(c, v[i]));
    }
  }
}

void diffusion_ddpm_step(const double* sched, const int32_t* t, const float* model_out, const float* x,
                         const float* noise, float* out, bool clip, int64_t B, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const double* c = sched + static_cast<int64_t>(t[b]) * kDiffusionCoefs;
    const float* eh = model_out + b * 2 * N;
    const float* v = eh + N;
    for (int64_t i = 0; i < N; ++i)
      out[b * N + i] = dmath::ddpm_elem(c, t[b] == 0, x[b * N + i], eh[i], v[i], noise[b * N + i], clip);
  }
}

void diffusion_ddim_step(const double* sched, const int32_t* t, const float* model_out, const float* x, double eta,
                         const float* noise, float* out, bool clip, int64_t B, int64_t N) {
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    const double* c = sched + static_cast<int64_t>(t[b]) * kDiffusionCoefs;
    const dmath::DdimScalars s = dmath::ddim_scalars(c, eta);
    const float* eh = model_out + b * 2 * N;
    for (int64_t i = 0; i < N; ++i)
      out[b * N + i] = dmath::ddim_elem(c, s, t[b] == 0, x[b * N + i], eh[i], noise ? noise[b * N + i] : 0.0f,
                                        noise != nullptr, clip);
  }
}

void diffusion_cfg_combine(const float* model_out, double scale, int64_t guided, float* out, int64_t B, int64_t C2,
                           int64_t S) {
  const float* cond = model_out;
  const float* unc = cond + B * C2 * S;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C2; ++c)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t i = (b * C2 + c) * S + s;
        out[i] = c < guided ? dmath::cfg_elem(cond[i], unc[i], scale) : cond[i];
      }
}

void diffusion_loss_means(const double* stats, int64_t B, float* out) {
  double l, m, v;
  dmath::loss_means(stats, B, &l, &m, &v);
  out[0] = static_cast<float>(l), out[1] = static_cast<float>(m), out[2] = static_cast<float>(v);
}

}  // namespace cpu
}  // namespace vt
