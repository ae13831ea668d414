// CUDA optimizer kernels behind kernels/optim.h, over flat fp32 device
// buffers of n elements; same arithmetic as kernels/cpu/optim.h (the
// hyperparameter expressions are formed in double on the host, then each
// element is updated in fp32, as torch.optim.AdamW's single-tensor path).
// sum_of_squares accumulates in double through a deterministic two-stage
// reduction (fixed per-block partials, then one block) and returns to the
// host (it synchronises `stream`).
#pragma once
#include <cuda_bf16.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/optim_step.h"

namespace vt {
namespace cuda {

// decay_mask: U8 [n] device pointer (nonzero = decay) or nullptr (decay everywhere).
// p_bf16: bf16 [n] device buffer or nullptr; when given, the kernel also
// writes the updated weights rounded to bf16 (round to nearest even), the
// copy bf16 GEMMs read. (Typed, so a stream passed in its place does not
// convert silently.)
void adamw(float* p, const float* g, float* m, float* v, int64_t n, double lr, double beta1, double beta2,
           double eps, double weight_decay, int64_t step, const uint8_t* decay_mask,
           __nv_bfloat16* p_bf16 = nullptr, cudaStream_t stream = 0);

// clip_grad_norm_ without a host synchronisation: the norm (fp32) goes to
// the device scalar norm_out[0]; the coefficient max_norm / (norm + 1e-6) is
// formed in double on the device and, when < 1 and the norm is finite,
// multiplies g. The sum of squares is the deterministic one of sum().
void clip_grad_norm(float* g, int64_t n, double max_norm, float* norm_out, cudaStream_t stream = 0);

double sum_of_squares(const float* x, int64_t n, cudaStream_t stream = 0);

// ema = decay * ema + (1 - decay) * p.
void ema_update(float* ema, const float* p, int64_t n, float decay, cudaStream_t stream = 0);

// kernels/optim.h's update_prepare: the deterministic sum of squares of g
// into a device double, then one thread runs update_prepare_math
// (kernels/optim_step.h) on the device state and record. No host wait.
void update_prepare(const float* g, int64_t n, const float* scalars, int n_scalars, UpdateState* state,
                    double* record, const UpdateHyper& h, const double* lr = nullptr, cudaStream_t stream = 0);
// kernels/optim.h's fused_update in one launch; every thread reads the
// device state (skip, clip factor, AdamW constants). p_bf16 and ema may be
// nullptr.
void fused_update(float* p, const float* g, float* m, float* v, int64_t n, const uint8_t* decay_mask,
                  __nv_bfloat16* p_bf16, float* ema, float ema_decay, const UpdateState* state,
                  cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
