#include "kernels/cpu/optim.h"

#include <cmath>

#include "core/dtype.h"

namespace vt {
namespace cpu {

namespace {
constexpr int64_t kParallelMin = 16384;
}

void adamw(float* p, const float* g, float* m, float* v, int64_t n, double lr, double beta1, double beta2,
           double eps, double weight_decay, int64_t step, const uint8_t* decay_mask) {
  // PyTorch's single-tensor AdamW: step_size = lr / bc1 and
  // denom = sqrt(v) / sqrt(bc2) + eps; decay first, on the old weights.
  const double t = static_cast<double>(step);
  const double bias_c1 = 1.0 - std::pow(beta1, t), bias_c2 = 1.0 - std::pow(beta2, t);
  const float step_size = static_cast<float>(lr / bias_c1);
  const float inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bias_c2));
  const float decay_factor = static_cast<float>(1.0 - lr * weight_decay);
  const float b1 = static_cast<float>(beta1), b2 = static_cast<float>(beta2), epsf = static_cast<float>(eps);
  const float one_m_b1 = static_cast<float>(1.0 - beta1), one_m_b2 = static_cast<float>(1.0 - beta2);
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    float pi = p[i];
    if (!decay_mask || decay_mask[i]) pi *= decay_factor;
    const float mi = b1 * m[i] + one_m_b1 * gi;
    const float vi = b2 * v[i] + one_m_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    p[i] = pi - step_size * mi / (std::sqrt(vi) * inv_sqrt_bc2 + epsf);
  }
}

double sum_of_squares(const float* x, int64_t n) {
  double s = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : s) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

void ema_update(float* ema, const float* p, int64_t n, float decay) {
  const float w = 1.0f - decay;
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) ema[i] = decay * ema[i] + w * p[i];
}

void update_prepare(const float* g, int64_t n, const float* scalars, int n_scalars, UpdateState* state,
                    double* record, const UpdateHyper& h, const double* lr) {
  UpdateHyper hh = h;
  if (lr) hh.lr = *lr;
  update_prepare_math(*state, sum_of_squares(g, n), scalars, n_scalars, record, hh);
}

void fused_update(float* p, const float* g, float* m, float* v, int64_t n, const uint8_t* decay_mask,
                  uint16_t* p_bf16, float* ema, float ema_decay, const UpdateState* state) {
  const UpdateState s = *state;
  if (s.skip) return;
  const float w = 1.0f - ema_decay;
#pragma omp parallel for schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) {
    const float pi = fused_update_element(s, p[i], g[i], m[i], v[i], !decay_mask || decay_mask[i]);
    if (p_bf16) p_bf16[i] = f32_to_bf16(pi);
    if (ema) ema[i] = ema_decay * ema[i] + w * pi;
  }
}

}  // namespace cpu
}  // namespace vt
