// check_dit_device: does a DiT training step on CUDA compute what the CPU
// computes, at real size? DiT-L/4 (the model and optimiser settings of
// configs/dit_l4.yaml, written out below so the program needs no YAML
// library on the GPU machine: SiameseNorm with normalized input and depth
// scaling, 1000 classes, label dropout 0.1, T = 1000, lr 1e-4, no weight
// decay, EMA 0.9999, the nll t0 term) on
// synthetic 32x32x4 latents trains `steps` steps from the same initial
// weights on the CPU (fp32) and on CUDA (fp32 or bf16): the same data,
// labels, label dropout, timesteps and noise (all keyed by the seed; the
// noise drawn on each device by kernels/diffusion.h from the same Philox
// keys), q_sample, forward, the learned-sigma MSE + VB loss, backward, AdamW
// and EMA. The CPU run is fp32, the CUDA run (cuda:0) uses the precision
// given here. Prints per-step losses of both devices, the largest relative
// loss difference, and the largest parameter difference after the last step
// beside the CPU run's largest update. Command line, tolerances (judged on the
// losses) and exit status: bench/gpu/agreement.h.
//   usage: check_dit_device [steps=5] [batch=4] [fp32|bf16 (default: both)]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "backbone/optimizer_state.h"
#include "bench/gpu/agreement.h"
#include "core/allocator.h"
#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "diffusion/gaussian_diffusion.h"
#include "kernels/diffusion.h"
#include "kernels/optim.h"

using namespace vt;

namespace {

constexpr uint64_t kSeed = 0, kPurposeLatents = 0xC4EC0001, kPurposeLabels = 0xC4EC0002,
                   kPurposeTimesteps = 0xC4EC0003, kPurposeNoise = 0xC4EC0004;

// configs/dit_l4.yaml's model and training settings.
struct DitL4 {
  DiTConfig model;
  int num_timesteps = 1000;
  double lr = 1e-4, weight_decay = 0.0, ema_decay = 0.9999;
  T0Term t0 = T0Term::Nll;
  uint64_t seed = 0;
  DitL4() {
    model.input_size = 32, model.in_channels = 4, model.num_classes = 1000, model.class_dropout = 0.1;
    model.scheme = NormScheme::Siamese, model.normalized_input = true, model.depth_scaling = true;
    model = dit_preset("DiT-L/4", model);
  }
};

struct Run {
  std::vector<double> losses;
  std::vector<float> init, params;  // before the first and after the last step
  agreement::DeviceFigures figures;  // GPU runs
};

// One step's host-side draws: labels (with DiT's label dropout) and
// timestep indices, the same for both devices.
struct HostDraws {
  Tensor y, t, tt;
};
HostDraws host_draws(const DitL4& tc, int64_t B, int64_t step) {
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

Run train(const DitL4& tc, Device dev, bool bf16, int steps, int64_t B) {
  const AttentionCalls begin = agreement::begin_figures();
  DiT model(tc.model);
  model.init_weights(tc.seed);  // on the host, then moved: both runs start from the same weights
  model.to(dev);
  if (bf16) model.params().enable_bf16_copy();  // precision bf16: bf16 GEMMs and activations, fp32 streams
  OptimizerState opt(model.params(), /*with_ema=*/true);
  const GaussianDiffusion diff = GaussianDiffusion::linear(tc.num_timesteps);
  const Tensor schedule = diff.schedule_on(dev);
  const int64_t C = tc.model.in_channels, S = tc.model.input_size;
  const Shape img{B, C, S, S}, out2{B, 2 * C, S, S};
  Tensor x0 = Tensor::empty(img, DType::F32, dev), noise = Tensor::empty(img, DType::F32, dev),
         xt = Tensor::empty(img, DType::F32, dev), out = Tensor::empty(out2, DType::F32, dev),
         dout = Tensor::empty(out2, DType::F32, dev), stats = Tensor::empty({B, 2}, DType::I64, dev);
  AdamWParams hp;
  hp.lr = tc.lr, hp.weight_decay = tc.weight_decay;  // betas (0.9, 0.999), eps 1e-8: DiT's AdamW defaults
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
    diffusion_training_losses(schedule, t, out, x0, xt, noise, diffusion_t0(tc.t0), stats, dout);
    model.params().zero_grad();
    model.backward(dout);
    opt.adamw_step(hp);
    opt.update_ema(static_cast<float>(tc.ema_decay));
    const Tensor h = stats.to(Device::cpu());
    r.losses.push_back(GaussianDiffusion::losses_from_stats(f64_data(h), B).mean);
  }
  r.params = model.params().weights().to(Device::cpu()).to_vector();
  r.figures = agreement::end_figures(begin, model.backbone().saved_activation_bytes());
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  agreement::Args args;
  if (const int rc = agreement::parse(argc, argv, "check_dit_device", 4, args)) return rc;
  const int steps = args.steps;
  const int64_t B = args.batch;
  try {
    const DitL4 tc;
    std::printf("check_dit_device: DiT-L/4, latents %lldx%lldx%lld, batch %lld, %d steps; cuda:0 vs cpu fp32\n",
                static_cast<long long>(tc.model.in_channels), static_cast<long long>(tc.model.input_size),
                static_cast<long long>(tc.model.input_size), static_cast<long long>(B), steps);
    const Run cpu = train(tc, Device::cpu(), false, steps, B);
    double largest_update = 0;  // context for the parameter difference: how far the CPU run moved
    for (size_t i = 0; i < cpu.params.size(); ++i)
      largest_update = std::max(largest_update, std::fabs(static_cast<double>(cpu.params[i]) - cpu.init[i]));
    bool ok = true;
    for (const std::string& prec : args.precisions) {
      const Run gpu = train(tc, Device::cuda(0), prec == "bf16", steps, B);
      if (gpu.init != cpu.init) std::printf("warning: the two runs did not start from the same weights\n");
      const double worst = agreement::compare_losses(prec, cpu.losses, gpu.losses);
      std::printf("%s: max |diff| parameters %.3g (the CPU run's largest update over %d steps: %.3g)\n", prec.c_str(),
                  agreement::max_abs_diff(gpu.params.data(), cpu.params.data(),
                                          static_cast<int64_t>(cpu.params.size())),
                  steps, largest_update);
      ok = agreement::verdict(prec, worst) && ok;
      ok = agreement::attention_verdict(prec, gpu.figures) && ok;
    }
    std::printf("check_dit_device: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_dit_device: %s\n", e.what());
    return 3;
  }
}
