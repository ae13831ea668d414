// CPU optimizer kernels behind kernels/optim.h (n contiguous elements).
#pragma once
#include <cstdint>

#include "kernels/optim_step.h"

namespace vt {
namespace cpu {

// One AdamW step (see kernels/optim.h) for step t >= 1; hyperparameters in
// double, rounded to fp32 only after forming 1 - beta, lr * wd and the bias
// corrections. decay_mask may be nullptr (decay everywhere).
void adamw(float* p, const float* g, float* m, float* v, int64_t n, double lr, double beta1, double beta2,
           double eps, double weight_decay, int64_t step, const uint8_t* decay_mask);

double sum_of_squares(const float* x, int64_t n);
void ema_update(float* ema, const float* p, int64_t n, float decay);

// kernels/optim.h's update_prepare / fused_update over host buffers
// (kernels/optim_step.h). ema and p_bf16 may be nullptr.
void update_prepare(const float* g, int64_t n, const float* scalars, int n_scalars, UpdateState* state,
                    double* record, const UpdateHyper& h, const double* lr = nullptr);
void fused_update(float* p, const float* g, float* m, float* v, int64_t n, const uint8_t* decay_mask,
                  uint16_t* p_bf16, float* ema, float ema_decay, const UpdateState* state);

}  // namespace cpu
}  // namespace vt
