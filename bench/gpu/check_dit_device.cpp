// check_dit_device: does a DiT training step on CUDA compute what the CPU
// computes, at real size? DiT-L/4 (the model and optimiser settings of
// configs/dit_l4.yaml, written out below so the program needs no YAML
// library on the GPU machine: SiameseNorm with normalized input and depth
// scaling, 1000 classes, label dropout 0.1, T = 1000, lr 1e-4, no weight
// decay, EMA 0.9999, the nll t0 term) on
// synthetic 32x32x4 latents trains `steps` steps from the same initial
// weights on the CPU (fp32) and on CUDA (fp32 or bf16) with dittrain's own
// step (diffusion/dit_step.h: label dropout, timesteps and noise keyed by the
// seed, the noise drawn on each device by kernels/diffusion.h from the same
// Philox keys, q_sample, forward, the learned-sigma MSE + VB loss, backward)
// and the update of the trainers' loop (train/loop.h via bench/loop_task.h:
// AdamW and EMA; on the GPU the fused device update with deferred reads).
// The latents and labels are drawn per step. The CPU run is fp32, the CUDA run (cuda:0) uses the precision
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
#include "bench/loop_task.h"
#include "core/allocator.h"
#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "diffusion/dit_step.h"
#include "diffusion/gaussian_diffusion.h"
#include "kernels/diffusion.h"
#include "kernels/optim.h"

using namespace vt;

namespace {

constexpr uint64_t kSeed = 0, kPurposeLatents = 0xC4EC0001, kPurposeLabels = 0xC4EC0002;

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

// `init`: the host weights to start from (every run starts from the CPU
// run's initial weights); undefined: initialise here (the CPU run). The
// initialisation of 458M parameters is single-threaded on the host, so the
// GPU runs copy it instead of drawing it again.
Run train(const DitL4& tc, Device dev, bool bf16, int steps, int64_t B, const Tensor& init = Tensor()) {
  const AttentionCalls begin = agreement::begin_figures();
  DiT model(tc.model);
  if (init.defined()) {
    Tensor w = model.params().weights();
    w.copy_from(init);
  } else {
    model.init_weights(tc.seed);  // on the host, then moved: every run starts from these weights
  }
  model.to(dev);
  if (bf16) model.params().enable_bf16_copy();  // precision bf16: bf16 GEMMs and activations, fp32 streams
  OptimizerState opt(model.params(), /*with_ema=*/true);
  const GaussianDiffusion diff = GaussianDiffusion::linear(tc.num_timesteps);
  DitStepBuffers buf = DitStepBuffers::plan(tc.model, diff, B, dev);
  const int64_t C = tc.model.in_channels, S = tc.model.input_size;
  if (!buf.x0.defined()) buf.x0 = Tensor::empty({B, C, S, S}, DType::F32, dev);  // plan() leaves a GPU x0 to the caller
  DitStepKeys k;
  k.seed = kSeed, k.global_batch = B, k.num_timesteps = tc.num_timesteps, k.t0 = tc.t0;
  UpdateOptions u;  // betas (0.9, 0.999), eps 1e-8: DiT's AdamW defaults
  u.adamw.weight_decay = tc.weight_decay;
  u.ema_decay = static_cast<float>(tc.ema_decay);
  Run r;
  r.init = model.params().weights().to(Device::cpu()).to_vector();
  vt_bench::FunctionStepTask task([&](int64_t s) {
    NoiseRows rows;
    rows.purpose = kPurposeLatents, rows.key = static_cast<uint64_t>(s);
    gaussian_noise(kSeed, rows, buf.x0);  // synthetic latents ~ N(0, 1), the scale DiT's scaled latents have
    Philox lab(kSeed, philox_stream(kPurposeLabels, static_cast<uint64_t>(s)));
    for (int64_t b = 0; b < B; ++b) buf.host_y.i32()[b] = static_cast<int32_t>(lab.integer(0, tc.model.num_classes - 1));
    k.step = s;
    dit_forward_backward(model, buf, k);
    StepTask::Output out;
    out.lr = tc.lr;
    if (buf.scalars.defined()) out.scalars = buf.scalars;  // GPU: (loss, mse, vb), read by the loop
    else out.loss = GaussianDiffusion::losses_from_stats(f64_data(buf.stats), B).mean;
    return out;
  });
  vt_bench::LoopHarness(model.params(), opt, u).run(task, 0, steps);
  r.losses = task.losses;
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
    // One CPU reference for every precision (gpu_check's agree_dit stage
    // runs fp32 and bf16 in one invocation).
    const Tensor init = Tensor::from_vector(cpu.init, {static_cast<int64_t>(cpu.init.size())});
    for (const std::string& prec : args.precisions) {
      const Run gpu = train(tc, Device::cuda(0), prec == "bf16", steps, B, init);
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
