#include "kernels/diffusion.h"

#include <string>

#include "kernels/cpu/diffusion.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/diffusion.h"
#endif

namespace vt {
namespace {

// everything after dim 0 of a [B, ...] tensor
int64_t per_sample(const Tensor& x) { return x.size(0) ? x.numel() / x.size(0) : 0; }

// F32 contiguous [B, ...] image-like tensor of shape `want`.
void check_image(const char* op, const char* name, const Tensor& t, const Shape& want) {
  opcheck::f32_like(op, name, t, want);
}

// [B, 2C, ...] -> [B, C, ...]; model_out F32 (or BF16 on CUDA), contiguous.
Shape half_channels(const char* op, const Tensor& model_out) {
  opcheck::io_dtype(op, "model_out", model_out);
  opcheck::contiguous(op, "model_out", model_out);
  if (model_out.dim() < 2 || model_out.size(1) % 2 != 0)
    opcheck::fail(op, opcheck::desc("model_out", model_out) + " must be [B, 2C, ...] with an even channel count");
  Shape s = model_out.shape();
  s[1] /= 2;
  return s;
}

// schedule I64 [K, kDiffusionCoefs] and t I32 [B] on `dev`; on the CPU every
// index is checked against K (on CUDA the kernels turn a bad index into NaN).
int64_t check_schedule(const char* op, const Tensor& schedule, const Tensor& t, int64_t B, Device dev) {
  opcheck::dtype(op, "schedule", schedule, DType::I64);
  opcheck::contiguous(op, "schedule", schedule);
  if (schedule.dim() != 2 || schedule.size(1) != kDiffusionCoefs || schedule.size(0) < 1)
    opcheck::fail(op, opcheck::desc("schedule", schedule) + " must be [K, " + std::to_string(kDiffusionCoefs) + "]");
  opcheck::dtype(op, "t", t, DType::I32);
  opcheck::contiguous(op, "t", t);
  opcheck::shape(op, "t", t, {B});
  opcheck::same_device(op, dev, {{"schedule", &schedule}, {"t", &t}});
  const int64_t K = schedule.size(0);
  if (dev.is_cpu())
    for (int64_t b = 0; b < B; ++b)
      if (t.i32()[b] < 0 || t.i32()[b] >= K)
        opcheck::fail(op, "timestep index " + std::to_string(t.i32()[b]) + " (sample " + std::to_string(b) +
                              ") outside [0, " + std::to_string(K) + ")");
  return K;
}

const float* opt_f32(const Tensor& t) { return t.defined() ? t.f32() : nullptr; }
float* opt_out(const Tensor& t) { return t.defined() ? t.f32() : nullptr; }

}  // namespace

double* f64_data(const Tensor& t) { return static_cast<double*>(t.raw()); }

void gaussian_noise(uint64_t seed, const NoiseRows& rows, const Tensor& out) {
  const char* op = "gaussian_noise";
  opcheck::dtype(op, "out", out, DType::F32);
  opcheck::contiguous(op, "out", out);
  if (out.dim() < 1) opcheck::fail(op, opcheck::desc("out", out) + " must be [B, ...]");
  if (rows.offset < 0 || rows.stride < 1)
    opcheck::fail(op, "row offset " + std::to_string(rows.offset) + " must be >= 0 and stride " +
                          std::to_string(rows.stride) + " >= 1");
  const int64_t B = out.size(0), N = per_sample(out);
  if (opcheck::on_cuda(op, out))
    VT_CUDA_CALL(cuda::gaussian_noise(out.f32(), B, N, seed, rows.purpose, rows.key, rows.row_last, rows.offset,
                                      rows.stride));
  cpu::gaussian_noise(out.f32(), B, N, seed, rows.purpose, rows.key, rows.row_last, rows.offset, rows.stride);
}

void diffusion_q_sample(const Tensor& schedule, const Tensor& t, const Tensor& x0, const Tensor& noise,
                        const Tensor& out) {
  const char* op = "diffusion_q_sample";
  opcheck::defined(op, "x0", x0);
  if (x0.dim() < 1) opcheck::fail(op, opcheck::desc("x0", x0) + " must be [B, ...]");
  check_image(op, "x0", x0, x0.shape());
  check_image(op, "noise", noise, x0.shape());
  check_image(op, "out", out, x0.shape());
  opcheck::same_device(op, x0.device(), {{"noise", &noise}, {"out", &out}});
  const int64_t B = x0.size(0), N = per_sample(x0);
  check_schedule(op, schedule, t, B, x0.device());
  if (opcheck::on_cuda(op, x0))
    VT_CUDA_CALL(cuda::diffusion_q_sample(f64_data(schedule), schedule.size(0), t.i32(), x0.f32(), noise.f32(),
                                          out.f32(), B, N));
  cpu::diffusion_q_sample(f64_data(schedule), t.i32(), x0.f32(), noise.f32(), out.f32(), B, N);
}

void diffusion_training_losses(const Tensor& schedule, const Tensor& t, const Tensor& model_out, const Tensor& x0,
                               const Tensor& x_t, const Tensor& noise, DiffusionT0 t0, const Tensor& stats,
                               const Tensor& grad) {
  const char* op = "diffusion_training_losses";
  const Shape xs = half_channels(op, model_out);
  const Device dev = model_out.device();
  check_image(op, "x0", x0, xs);
  check_image(op, "x_t", x_t, xs);
  check_image(op, "noise", noise, xs);
  const int64_t B = xs[0], N = per_sample(x0);
  opcheck::like(op, "stats", stats, {B, 2}, DType::I64);
  if (grad.defined()) opcheck::like(op, "grad", grad, model_out.shape(), model_out.dtype());
  opcheck::same_device(op, dev, {{"x0", &x0}, {"x_t", &x_t}, {"noise", &noise}, {"stats", &stats}, {"grad", &grad}});
  check_schedule(op, schedule, t, B, dev);
  if (opcheck::on_cuda(op, dev))
    VT_CUDA_CALL(cuda::diffusion_training_losses(f64_data(schedule), schedule.size(0), t.i32(), model_out.raw(),
                                                 x0.f32(), x_t.f32(), noise.f32(), t0, f64_data(stats),
                                                 grad.defined() ? grad.raw() : nullptr, B, N, model_out.dtype()));
  cpu::diffusion_training_losses(f64_data(schedule), t.i32(), model_out.f32(), x0.f32(), x_t.f32(), noise.f32(), t0,
                                 f64_data(stats), opt_out(grad), B, N);
}

void diffusion_loss_means(const Tensor& stats, const Tensor& out) {
  const char* op = "diffusion_loss_means";
  opcheck::defined(op, "stats", stats);
  if (stats.dim() != 2 || stats.size(1) != 2 || stats.size(0) < 1)
    opcheck::fail(op, opcheck::desc("stats", stats) + " must be [B >= 1, 2]");
  opcheck::like(op, "stats", stats, stats.shape(), DType::I64);
  opcheck::like(op, "out", out, {3}, DType::F32);
  opcheck::same_device(op, stats.device(), {{"out", &out}});
  if (opcheck::on_cuda(op, stats)) VT_CUDA_CALL(cuda::diffusion_loss_means(f64_data(stats), stats.size(0), out.f32()));
  cpu::diffusion_loss_means(f64_data(stats), stats.size(0), out.f32());
}

void diffusion_p_mean_variance(const Tensor& schedule, const Tensor& t, const Tensor& model_out, const Tensor& x,
                               bool clip, const Tensor& mean, const Tensor& log_variance, const Tensor& x0_hat) {
  const char* op = "diffusion_p_mean_variance";
  const Shape xs = half_channels(op, model_out);
  const Device dev = model_out.device();
  check_image(op, "x", x, xs);
  if (mean.defined()) check_image(op, "mean", mean, xs);
  if (log_variance.defined()) check_image(op, "log_variance", log_variance, xs);
  if (x0_hat.defined()) check_image(op, "x0_hat", x0_hat, xs);
  opcheck::same_device(op, dev, {{"x", &x}, {"mean", &mean}, {"log_variance", &log_variance}, {"x0_hat", &x0_hat}});
  const int64_t B = xs[0], N = per_sample(x);
  check_schedule(op, schedule, t, B, dev);
  if (opcheck::on_cuda(op, dev))
    VT_CUDA_CALL(cuda::diffusion_p_mean_variance(f64_data(schedule), schedule.size(0), t.i32(), model_out.raw(),
                                                 x.f32(), clip, opt_out(mean), opt_out(log_variance), opt_out(x0_hat),
                                                 B, N, model_out.dtype()));
  cpu::diffusion_p_mean_variance(f64_data(schedule), t.i32(), model_out.f32(), x.f32(), clip, opt_out(mean),
                                 opt_out(log_variance), opt_out(x0_hat), B, N);
}

void diffusion_ddpm_step(const Tensor& schedule, const Tensor& t, const Tensor& model_out, const Tensor& x,
                         const Tensor& noise, const Tensor& out, bool clip) {
  const char* op = "diffusion_ddpm_step";
  const Shape xs = half_channels(op, model_out);
  const Device dev = model_out.device();
  check_image(op, "x", x, xs);
  check_image(op, "noise", noise, xs);
  check_image(op, "out", out, xs);
  opcheck::same_device(op, dev, {{"x", &x}, {"noise", &noise}, {"out", &out}});
  const int64_t B = xs[0], N = per_sample(x);
  check_schedule(op, schedule, t, B, dev);
  if (opcheck::on_cuda(op, dev))
    VT_CUDA_CALL(cuda::diffusion_ddpm_step(f64_data(schedule), schedule.size(0), t.i32(), model_out.raw(), x.f32(),
                                           noise.f32(), out.f32(), clip, B, N, model_out.dtype()));
  cpu::diffusion_ddpm_step(f64_data(schedule), t.i32(), model_out.f32(), x.f32(), noise.f32(), out.f32(), clip, B, N);
}

void diffusion_ddim_step(const Tensor& schedule, const Tensor& t, const Tensor& model_out, const Tensor& x,
                         double eta, const Tensor& noise, const Tensor& out, bool clip) {
  const char* op = "diffusion_ddim_step";
  const Shape xs = half_channels(op, model_out);
  const Device dev = model_out.device();
  if (!(eta >= 0.0)) opcheck::fail(op, "eta must be >= 0, got " + std::to_string(eta));
  check_image(op, "x", x, xs);
  if (eta != 0.0 || noise.defined()) check_image(op, "noise", noise, xs);
  check_image(op, "out", out, xs);
  opcheck::same_device(op, dev, {{"x", &x}, {"noise", &noise}, {"out", &out}});
  const int64_t B = xs[0], N = per_sample(x);
  check_schedule(op, schedule, t, B, dev);
  if (opcheck::on_cuda(op, dev))
    VT_CUDA_CALL(cuda::diffusion_ddim_step(f64_data(schedule), schedule.size(0), t.i32(), model_out.raw(), x.f32(),
                                           eta, opt_f32(noise), out.f32(), clip, B, N, model_out.dtype()));
  cpu::diffusion_ddim_step(f64_data(schedule), t.i32(), model_out.f32(), x.f32(), eta, opt_f32(noise), out.f32(), clip,
                           B, N);
}

void diffusion_cfg_combine(const Tensor& model_out, double scale, int guided_channels, const Tensor& out) {
  const char* op = "diffusion_cfg_combine";
  opcheck::io_dtype(op, "model_out", model_out);
  opcheck::contiguous(op, "model_out", model_out);
  if (model_out.dim() < 2 || model_out.size(0) % 2 != 0 || model_out.size(1) % 2 != 0)
    opcheck::fail(op, opcheck::desc("model_out", model_out) + " must be [2B, 2C, ...]");
  Shape os = model_out.shape();
  os[0] /= 2;
  opcheck::like(op, "out", out, os, model_out.dtype());
  opcheck::same_device(op, model_out.device(), {{"out", &out}});
  const int64_t B = os[0], C2 = os[1], C = C2 / 2, S = (B > 0 && C2 > 0) ? out.numel() / (B * C2) : 0;
  const int64_t g = guided_channels < 0 ? C : guided_channels;
  if (g > C)
    opcheck::fail(op, "guided_channels " + std::to_string(g) + " exceeds the " + std::to_string(C) +
                          " noise channels");
  if (opcheck::on_cuda(op, model_out))
    VT_CUDA_CALL(cuda::diffusion_cfg_combine(model_out.raw(), scale, g, out.raw(), B, C2, S, model_out.dtype()));
  cpu::diffusion_cfg_combine(model_out.f32(), scale, g, out.f32(), B, C2, S);
}

}  // namespace vt
