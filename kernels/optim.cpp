#include "kernels/optim.h"

#include <cmath>
#include <cstring>
#include <string>

#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/optim.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/optim.h"
#endif

namespace vt {
using opcheck::on_cuda;

namespace {

void check_flat(const char* op, const char* name, const Tensor& t, int64_t numel, DType dt = DType::F32) {
  opcheck::dtype(op, name, t, dt);
  opcheck::contiguous(op, name, t);
  if (t.numel() != numel)
    opcheck::fail(op, opcheck::desc(name, t) + " has " + std::to_string(t.numel()) + " elements, expected " +
                          std::to_string(numel));
}

// The AdamW buffers both update ops take: flat, contiguous, n elements each
// (decay_mask U8, param_bf16 BF16, when given). Returns n.
int64_t check_adamw_buffers(const char* op, const Tensor& param, const Tensor& grad, const Tensor& exp_avg,
                            const Tensor& exp_avg_sq, const Tensor& decay_mask, const Tensor& param_bf16) {
  opcheck::defined(op, "param", param);
  const int64_t n = param.numel();
  check_flat(op, "param", param, n);
  check_flat(op, "grad", grad, n);
  check_flat(op, "exp_avg", exp_avg, n);
  check_flat(op, "exp_avg_sq", exp_avg_sq, n);
  if (decay_mask.defined()) check_flat(op, "decay_mask", decay_mask, n, DType::U8);
  if (param_bf16.defined()) check_flat(op, "param_bf16", param_bf16, n, DType::BF16);
  return n;
}

}  // namespace

void adamw_step(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                const AdamWParams& hp, int64_t step, const Tensor& decay_mask, const Tensor& param_bf16) {
  const char* op = "adamw_step";
  const int64_t n = check_adamw_buffers(op, param, grad, exp_avg, exp_avg_sq, decay_mask, param_bf16);
  if (step < 1) opcheck::fail(op, "step must be >= 1 (bias correction uses t = 1, 2, ...), got " + std::to_string(step));
  if (!(hp.beta1 >= 0.0 && hp.beta1 < 1.0) || !(hp.beta2 >= 0.0 && hp.beta2 < 1.0))
    opcheck::fail(op, "betas must be in [0, 1), got " + std::to_string(hp.beta1) + ", " + std::to_string(hp.beta2));
  opcheck::same_device(op, param.device(), {{"grad", &grad}, {"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq},
                                            {"decay_mask", &decay_mask}, {"param_bf16", &param_bf16}});
  if (on_cuda(op, param)) {
#ifdef VT_CUDA
    cuda::adamw(param.f32(), grad.f32(), exp_avg.f32(), exp_avg_sq.f32(), n, hp.lr, hp.beta1, hp.beta2, hp.eps,
                hp.weight_decay, step, decay_mask.defined() ? decay_mask.u8() : nullptr,
                param_bf16.defined() ? static_cast<__nv_bfloat16*>(param_bf16.raw()) : nullptr);
#endif
    return;
  }
  cpu::adamw(param.f32(), grad.f32(), exp_avg.f32(), exp_avg_sq.f32(), n, hp.lr, hp.beta1, hp.beta2, hp.eps,
             hp.weight_decay, step, decay_mask.defined() ? decay_mask.u8() : nullptr);
  if (param_bf16.defined()) {  // the CPU twin of the fused copy (the handle shares param_bf16's storage)
    Tensor dst = param_bf16;
    dst.copy_from(param.to(DType::BF16).view(dst.shape()));
  }
}

Tensor decay_mask_from_segments(int64_t numel, const std::vector<DecaySegment>& segments) {
  if (numel < 0) throw std::invalid_argument("decay_mask_from_segments: negative numel " + std::to_string(numel));
  Tensor mask = Tensor::zeros({numel}, DType::U8);
  uint8_t* m = mask.u8();
  for (size_t i = 0; i < segments.size(); ++i) {
    const DecaySegment& s = segments[i];
    if (s.offset < 0 || s.length < 0 || s.offset + s.length > numel)
      throw std::invalid_argument("decay_mask_from_segments: segment " + std::to_string(i) + " [" +
                                  std::to_string(s.offset) + ", " + std::to_string(s.offset + s.length) +
                                  ") outside the buffer of " + std::to_string(numel) + " elements");
    if (s.decay)
      for (int64_t j = s.offset; j < s.offset + s.length; ++j) m[j] = 1;
  }
  return mask;
}

double sum_of_squares(const Tensor& grad) {
  const char* op = "sum_of_squares";
  opcheck::defined(op, "grad", grad);
  check_flat(op, "grad", grad, grad.numel());
  if (on_cuda(op, grad)) {
#ifdef VT_CUDA
    return cuda::sum_of_squares(grad.f32(), grad.numel());
#endif
  }
  return cpu::sum_of_squares(grad.f32(), grad.numel());
}

double grad_norm(const Tensor& grad) { return std::sqrt(sum_of_squares(grad)); }

double clip_grad_norm(const Tensor& grad, double max_norm) {
  if (!(max_norm > 0.0))
    throw std::invalid_argument("clip_grad_norm: max_norm must be > 0, got " + std::to_string(max_norm));
  const double norm = grad_norm(grad);
  if (!std::isfinite(norm)) return norm;
  const double coef = max_norm / (norm + 1e-6);
  if (coef < 1.0) {
    if (on_cuda("clip_grad_norm", grad)) {
#ifdef VT_CUDA
      cuda::scale(grad.raw(), static_cast<float>(coef), grad.raw(), grad.numel(), DType::F32);
#endif
    } else {
      cpu::scale(grad.f32(), static_cast<float>(coef), grad.f32(), grad.numel());
    }
  }
  return norm;
}

void clip_grad_norm_on_device(const Tensor& grad, double max_norm, const Tensor& norm_out) {
  const char* op = "clip_grad_norm_on_device";
  if (!(max_norm > 0.0)) opcheck::fail(op, "max_norm must be > 0, got " + std::to_string(max_norm));
  opcheck::defined(op, "grad", grad);
  check_flat(op, "grad", grad, grad.numel());
  check_flat(op, "norm_out", norm_out, 1);
  opcheck::same_device(op, grad.device(), {{"norm_out", &norm_out}});
  if (on_cuda(op, grad)) {
#ifdef VT_CUDA
    cuda::clip_grad_norm(grad.f32(), grad.numel(), max_norm, norm_out.f32());
#endif
    return;
  }
  norm_out.f32()[0] = static_cast<float>(clip_grad_norm(grad, max_norm));
}

void ema_update(const Tensor& ema, const Tensor& param, float decay) {
  const char* op = "ema_update";
  opcheck::defined(op, "ema", ema);
  check_flat(op, "ema", ema, ema.numel());
  check_flat(op, "param", param, ema.numel());
  opcheck::same_device(op, ema.device(), {{"param", &param}});
  if (on_cuda(op, ema)) {
#ifdef VT_CUDA
    cuda::ema_update(ema.f32(), param.f32(), ema.numel(), decay);
#endif
    return;
  }
  cpu::ema_update(ema.f32(), param.f32(), ema.numel(), decay);
}

}  // namespace vt

namespace vt {

namespace {
UpdateState* state_of(const char* op, const Tensor& state) {
  opcheck::defined(op, "state", state);
  check_flat(op, "state", state, kUpdateStateWords, DType::I64);
  return static_cast<UpdateState*>(state.raw());
}
}  // namespace

void update_prepare(const Tensor& grad, const Tensor& scalars, const Tensor& state, const Tensor& record,
                    const UpdateHyper& hp, const Tensor& lr) {
  const char* op = "update_prepare";
  opcheck::defined(op, "grad", grad);
  check_flat(op, "grad", grad, grad.numel());
  opcheck::defined(op, "scalars", scalars);
  if (scalars.numel() < 1) opcheck::fail(op, opcheck::desc("scalars", scalars) + " is empty (scalars[0] is the loss)");
  check_flat(op, "scalars", scalars, scalars.numel());
  UpdateState* s = state_of(op, state);
  opcheck::defined(op, "record", record);
  check_flat(op, "record", record, kUpdateRecordHead + scalars.numel(), DType::I64);
  if (lr.defined()) check_flat(op, "lr", lr, 1, DType::I64);
  opcheck::same_device(op, grad.device(),
                       {{"scalars", &scalars}, {"state", &state}, {"record", &record}, {"lr", &lr}});
  const int k = static_cast<int>(scalars.numel());
  double* rec = static_cast<double*>(record.raw());
  const double* lr_p = lr.defined() ? static_cast<const double*>(lr.raw()) : nullptr;
  if (on_cuda(op, grad)) {
#ifdef VT_CUDA
    cuda::update_prepare(grad.f32(), grad.numel(), scalars.f32(), k, s, rec, hp, lr_p);
#endif
    return;
  }
  cpu::update_prepare(grad.f32(), grad.numel(), scalars.f32(), k, s, rec, hp, lr_p);
}

void fused_update(const Tensor& param, const Tensor& grad, const Tensor& exp_avg, const Tensor& exp_avg_sq,
                  const Tensor& decay_mask, const Tensor& param_bf16, const Tensor& ema, float ema_decay,
                  const Tensor& state) {
  const char* op = "fused_update";
  const int64_t n = check_adamw_buffers(op, param, grad, exp_avg, exp_avg_sq, decay_mask, param_bf16);
  if (ema.defined()) check_flat(op, "ema", ema, n);
  UpdateState* s = state_of(op, state);
  opcheck::same_device(op, param.device(), {{"grad", &grad}, {"exp_avg", &exp_avg}, {"exp_avg_sq", &exp_avg_sq},
                                            {"decay_mask", &decay_mask}, {"param_bf16", &param_bf16},
                                            {"ema", &ema}, {"state", &state}});
  const uint8_t* mask = decay_mask.defined() ? decay_mask.u8() : nullptr;
  float* e = ema.defined() ? ema.f32() : nullptr;
  if (on_cuda(op, param)) {
#ifdef VT_CUDA
    cuda::fused_update(param.f32(), grad.f32(), exp_avg.f32(), exp_avg_sq.f32(), n, mask,
                       param_bf16.defined() ? static_cast<__nv_bfloat16*>(param_bf16.raw()) : nullptr, e, ema_decay,
                       s);
#endif
    return;
  }
  cpu::fused_update(param.f32(), grad.f32(), exp_avg.f32(), exp_avg_sq.f32(), n, mask,
                    param_bf16.defined() ? param_bf16.bf16() : nullptr, e, ema_decay, s);
}

Tensor make_update_state(Device device, int64_t t, int64_t consecutive) {
  if (t < 0 || consecutive < 0)
    throw std::invalid_argument("make_update_state: t and consecutive must be >= 0, got " + std::to_string(t) + ", " +
                                std::to_string(consecutive));
  Tensor host = Tensor::zeros({kUpdateStateWords}, DType::I64);
  UpdateState s{};
  s.t = t;
  s.consecutive = consecutive;
  s.skip = 1;  // nothing prepared yet
  s.clip_scale = 1.0f;
  std::memcpy(host.raw(), &s, sizeof s);
  return device.is_cpu() ? host : host.to(device);
}

}  // namespace vt
