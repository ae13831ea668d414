// check_dit_device: does a DiT training step on CUDA compute what the CPU
// computes, at real size? DiT-L/4 (the model of configs/dit_l4.yaml) on
// synthetic 32x32x4 latents trains `steps` steps from the same initial
// weights on the CPU (fp32) and on CUDA (fp32 or bf16): the same data,
// labels, label dropout, timesteps and noise (all keyed by the seed; the
// noise drawn on each device by kernels/diffusion.h from the same Philox
// keys), q_sample, forward, the learned-sigma MSE + VB loss, backward, AdamW
// and EMA. The config's device/precision keys are not read: the CPU run is
// fp32, the CUDA run uses the precision given here. Prints per-step losses of both devices, the largest relative
// loss difference and the largest parameter difference after the last step,
// and exits non-zero beyond the tolerance (fp32 1e-4, bf16 2e-2 relative
// loss; parameters 1e-4 fp32, 2e-2 bf16 absolute).
//   usage: check_dit_device [steps=5] [batch=4] [fp32|bf16]
// Exit codes: 0 agreement, 1 disagreement, 2 bad usage or no GPU, 3 error.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "backbone/optimizer_state.h"
#include "core/allocator.h"
#include "core/config.h"
#include "core/config_paths.h"
#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "diffusion/dit_train_config.h"
#include "diffusion/gaussian_diffusion.h"
#include "kernels/diffusion.h"
#include "kernels/optim.h"
#include "train/device_choice.h"

#ifndef VT_CONFIGS_DIR
#define VT_CONFIGS_DIR "configs"
#endif

using namespace vt;

namespace {

constexpr uint64_t kSeed = 0, kPurposeLatents = 0xC4EC0001, kPurposeLabels = 0xC4EC0002,
                   kPurposeTimesteps = 0xC4EC0003, kPurposeNoise = 0xC4EC0004;

struct Run {
  std::vector<double> losses;
  std::vector<float> init, params;  // before the first and after the last step
};

// One step's host-side draws: labels (with DiT's label dropout) and
// timestep indices, the same for both devices.
struct HostDraws {
  Tensor y, t, tt;
};
HostDraws host_draws(const DitTrainConfig& tc, int64_t B, int64_t step) {
  HostDraws d{Tensor::empty({B}, DType::I32), Tensor::empty({B}, DType::I32), Tensor::empty({B})};
  Philox lab(kSeed, philox_stream(kPurposeLabels, static_cast<uint64_t>(step)));
  Philox ts(kSeed, philox_stream(kPurposeTimesteps, static_cast<uint64_t>(step)));
  for (int64_t b = 0; b < B; ++b) {
    d.y.i32()[b] = static_cast<int32_t>(lab.integer(0, tc.model.num_classes - 1));
    d.t.i32()[b] = static_cast<int32_t>(ts.integer(0, tc.num_timesteps - 1));
    d.tt.f32()[b] = static_cast<float>(d.t.i32()[b]);
  }
  drop_labels(d.y, tc.model.class_dropout, tc.model.num_classes, kSeed, static_cast<uint64_t>(step));
  return d;
}

Run train(const DitTrainConfig& tc, Device dev, bool bf16, int steps, int64_t B) {
  DiT model(tc.model);
  model.init_weights(tc.seed);  // on the host, then moved: both runs start from the same weights
  model.to(dev);
  if (bf16) model.params().enable_bf16_copy();  // precision bf16: bf16 GEMM operands, fp32 everything else
  OptimizerState opt(model.params(), /*with_ema=*/true);
  const GaussianDiffusion diff = GaussianDiffusion::linear(tc.num_timesteps);
  const Tensor schedule = diff.schedule_on(dev);
  const int64_t C = tc.model.in_channels, S = tc.model.input_size;
  const Shape img{B, C, S, S}, out2{B, 2 * C, S, S};
  Tensor x0 = Tensor::empty(img, DType::F32, dev), noise = Tensor::empty(img, DType::F32, dev),
         xt = Tensor::empty(img, DType::F32, dev), out = Tensor::empty(out2, DType::F32, dev),
         dout = Tensor::empty(out2, DType::F32, dev), stats = Tensor::empty({B, 2}, DType::I64, dev);
  AdamWParams hp;
  hp.lr = tc.lr, hp.beta1 = tc.beta1, hp.beta2 = tc.beta2, hp.eps = tc.adam_eps, hp.weight_decay = tc.weight_decay;
  Run r;
  r.init = model.params().weights().to(Device::cpu()).to_vector();
  for (int s = 1; s <= steps; ++s) {
    NoiseRows rows;
    rows.purpose = kPurposeLatents, rows.key = static_cast<uint64_t>(s);
    gaussian_noise(kSeed, rows, x0);  // synthetic latents ~ N(0, 1), the scale DiT's scaled latents have
    rows.purpose = kPurposeNoise;
    gaussian_noise(kSeed, rows, noise);
    const HostDraws d = host_draws(tc, B, s);
    const Tensor t = d.t.to(dev), tt = d.tt.to(dev), y = d.y.to(dev);
    diffusion_q_sample(schedule, t, x0, noise, xt);
    model.forward(xt, tt, y, out);
    diffusion_training_losses(schedule, t, out, x0, xt, noise, diffusion_t0(tc.t0_term), stats, dout);
    model.params().zero_grad();
    model.backward(dout);
    opt.adamw_step(hp);
    opt.update_ema(static_cast<float>(tc.ema_decay));
    const Tensor h = stats.to(Device::cpu());
    r.losses.push_back(GaussianDiffusion::losses_from_stats(f64_data(h), B).mean);
  }
  r.params = model.params().weights().to(Device::cpu()).to_vector();
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  const int64_t B = argc > 2 ? std::atoll(argv[2]) : 4;
  const std::string prec = argc > 3 ? argv[3] : "fp32";
  if (steps < 1 || B < 1 || (prec != "fp32" && prec != "bf16")) {
    std::fprintf(stderr, "usage: check_dit_device [steps>=1] [batch>=1] [fp32|bf16]\n");
    return 2;
  }
  if (!cuda_available()) {
    std::fprintf(stderr, "check_dit_device: no CUDA device visible\n");
    return 2;
  }
  try {
    const std::string path = find_config("dit_l4.yaml", config_search_dirs(VT_CONFIGS_DIR));
    const DitTrainConfig tc = dit_train_config(Config::load(path, dittrain_schema()), path);
    const double loss_tol = prec == "bf16" ? 2e-2 : 1e-4, param_tol = prec == "bf16" ? 2e-2 : 1e-4;
    DeviceChoice gpu_choice = choose_device("cuda", prec, "device", "precision");
    apply_device_choice(gpu_choice);
    std::printf("check_dit_device: %s vs cpu; DiT-L/4 (%s), latents %lldx%lldx%lld\n", gpu_choice.describe().c_str(),
                path.c_str(), static_cast<long long>(tc.model.in_channels), static_cast<long long>(tc.model.input_size),
                static_cast<long long>(tc.model.input_size));
    const Run cpu = train(tc, Device::cpu(), false, steps, B);
    const Run gpu = train(tc, gpu_choice.device, gpu_choice.bf16(), steps, B);
    double worst_loss = 0, worst_param = 0;
    for (int s = 0; s < steps; ++s) {
      const double rel = std::fabs(gpu.losses[static_cast<size_t>(s)] - cpu.losses[static_cast<size_t>(s)]) /
                         std::max(std::fabs(cpu.losses[static_cast<size_t>(s)]), 1e-30);
      worst_loss = std::max(worst_loss, std::isfinite(rel) ? rel : INFINITY);
      std::printf("step %d  loss cpu %.9f  cuda %.9f  rel %.3e\n", s + 1, cpu.losses[static_cast<size_t>(s)],
                  gpu.losses[static_cast<size_t>(s)], rel);
    }
    double largest_update = 0;  // context for the parameter difference: how far the CPU run moved
    for (size_t i = 0; i < cpu.params.size(); ++i) {
      const double e = std::fabs(static_cast<double>(gpu.params[i]) - cpu.params[i]);
      worst_param = std::max(worst_param, std::isfinite(e) ? e : INFINITY);
      largest_update = std::max(largest_update, std::fabs(static_cast<double>(cpu.params[i]) - cpu.init[i]));
    }
    if (gpu.init != cpu.init) std::printf("warning: the two runs did not start from the same weights\n");
    std::printf("largest parameter change of the CPU run over %d steps: %.3e\n", steps, largest_update);
    const bool ok = worst_loss <= loss_tol && worst_param <= param_tol;
    std::printf("check_dit_device DiT-L/4 %s batch %lld steps %d: max rel loss diff %.3e (tol %.0e), max param diff "
                "%.3e (tol %.0e): %s\n",
                prec.c_str(), static_cast<long long>(B), steps, worst_loss, loss_tol, worst_param, param_tol,
                ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_dit_device: %s\n", e.what());
    return 3;
  }
}
