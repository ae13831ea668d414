#include "kernels/cuda/optim.h"

#include <cmath>

#include "kernels/cuda/common.cuh"
#include "kernels/cuda/elementwise.h"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

struct AdamWConsts {
  float step_size, inv_sqrt_bc2, decay_factor, b1, b2, eps, one_m_b1, one_m_b2;
};

__global__ void adamw_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                             float* __restrict__ v, int64_t n, AdamWConsts c, const uint8_t* __restrict__ mask,
                             __nv_bfloat16* __restrict__ p_bf16) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float gi = g[i];
    float pi = p[i];
    if (!mask || mask[i]) pi *= c.decay_factor;
    const float mi = c.b1 * m[i] + c.one_m_b1 * gi;
    const float vi = c.b2 * v[i] + c.one_m_b2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    pi = pi - c.step_size * mi / (sqrtf(vi) * c.inv_sqrt_bc2 + c.eps);
    p[i] = pi;
    if (p_bf16) p_bf16[i] = __float2bfloat16_rn(pi);
  }
}

// Every thread reads the device sum of squares and forms the coefficient
// itself: no host round trip. The norm goes to norm_out[0] (fp32).
__global__ void clip_kernel(float* __restrict__ g, int64_t n, const double* __restrict__ sumsq, double max_norm,
                            float* __restrict__ norm_out) {
  const double norm = sqrt(*sumsq);
  if (blockIdx.x == 0 && threadIdx.x == 0) norm_out[0] = static_cast<float>(norm);
  if (!isfinite(norm)) return;  // the caller skips the step; gradients stay as they are
  const double coef = max_norm / (norm + 1e-6);
  if (!(coef < 1.0)) return;
  const float f = static_cast<float>(coef);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    g[i] = g[i] * f;
}

__global__ void ema_kernel(float* __restrict__ ema, const float* __restrict__ p, int64_t n, float decay, float w) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    ema[i] = decay * ema[i] + w * p[i];
}

__global__ void update_prepare_kernel(const double* __restrict__ sumsq, const float* __restrict__ scalars,
                                      int n_scalars, UpdateState* __restrict__ state, double* __restrict__ record,
                                      UpdateHyper h, const double* __restrict__ lr) {
  if (lr) h.lr = *lr;  // a graph replay's rate (kernels/optim.h)
  if (blockIdx.x == 0 && threadIdx.x == 0) update_prepare_math(*state, *sumsq, scalars, n_scalars, record, h);
}

__global__ void fused_update_kernel(float* __restrict__ p, const float* __restrict__ g, float* __restrict__ m,
                                    float* __restrict__ v, int64_t n, const uint8_t* __restrict__ mask,
                                    __nv_bfloat16* __restrict__ p_bf16, float* __restrict__ ema, float ema_decay,
                                    const UpdateState* __restrict__ state) {
  const UpdateState s = *state;
  if (s.skip) return;
  const float w = 1.0f - ema_decay;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float pi = fused_update_element(s, p[i], g[i], m[i], v[i], !mask || mask[i]);
    if (p_bf16) p_bf16[i] = __float2bfloat16_rn(pi);
    if (ema) ema[i] = ema_decay * ema[i] + w * pi;
  }
}

}  // namespace

void update_prepare(const float* g, int64_t n, const float* scalars, int n_scalars, UpdateState* state,
                    double* record, const UpdateHyper& h, const double* lr, cudaStream_t stream) {
  const char* op = "cuda::update_prepare";
  Workspace sumsq(sizeof(double), stream);
  sum_to_device(g, n, true, DType::F32, sumsq.f64(), stream);
  update_prepare_kernel<<<1, 32, 0, stream>>>(sumsq.f64(), scalars, n_scalars, state, record, h, lr);
  check_launch(op);
}

void fused_update(float* p, const float* g, float* m, float* v, int64_t n, const uint8_t* decay_mask,
                  __nv_bfloat16* p_bf16, float* ema, float ema_decay, const UpdateState* state,
                  cudaStream_t stream) {
  const char* op = "cuda::fused_update";
  if (n == 0) return;
  fused_update_kernel<<<grid_1d(n, 256), 256, 0, stream>>>(p, g, m, v, n, decay_mask, p_bf16, ema, ema_decay,
                                                           state);
  check_launch(op);
}

void adamw(float* p, const float* g, float* m, float* v, int64_t n, double lr, double beta1, double beta2,
           double eps, double weight_decay, int64_t step, const uint8_t* decay_mask, __nv_bfloat16* p_bf16,
           cudaStream_t stream) {
  const char* op = "cuda::adamw";
  if (step < 1) throw std::invalid_argument(std::string(op) + ": step must be >= 1, got " + std::to_string(step));
  if (n == 0) return;
  // The same host-side constants as kernels/cpu/optim.cpp, so both devices
  // round identically.
  const double t = static_cast<double>(step);
  const double bias_c1 = 1.0 - std::pow(beta1, t), bias_c2 = 1.0 - std::pow(beta2, t);
  AdamWConsts c;
  c.step_size = static_cast<float>(lr / bias_c1);
  c.inv_sqrt_bc2 = static_cast<float>(1.0 / std::sqrt(bias_c2));
  c.decay_factor = static_cast<float>(1.0 - lr * weight_decay);
  c.b1 = static_cast<float>(beta1);
  c.b2 = static_cast<float>(beta2);
  c.eps = static_cast<float>(eps);
  c.one_m_b1 = static_cast<float>(1.0 - beta1);
  c.one_m_b2 = static_cast<float>(1.0 - beta2);
  adamw_kernel<<<grid_1d(n, 256), 256, 0, stream>>>(p, g, m, v, n, c, decay_mask, p_bf16);
  check_launch(op);
}

void clip_grad_norm(float* g, int64_t n, double max_norm, float* norm_out, cudaStream_t stream) {
  const char* op = "cuda::clip_grad_norm";
  Workspace sumsq(sizeof(double), stream);
  sum_to_device(g, n, true, DType::F32, sumsq.f64(), stream);
  clip_kernel<<<grid_1d(n, 256), 256, 0, stream>>>(g, n, sumsq.f64(), max_norm, norm_out);
  check_launch(op);
}

void ema_update(float* ema, const float* p, int64_t n, float decay, cudaStream_t stream) {
  const char* op = "cuda::ema_update";
  if (n == 0) return;
  ema_kernel<<<grid_1d(n, 256), 256, 0, stream>>>(ema, p, n, decay, 1.0f - decay);
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
