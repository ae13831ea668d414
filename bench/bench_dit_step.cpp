// One DiT training step: q_sample, forward, the learned-sigma loss,
// backward, AdamW and EMA, as dittrain runs it. Compare with
// tools/bench_dit_step.py (the DiT repository's model in PyTorch).
//
// GPU mode (any --flag; bench/step_bench.h): dittrain's own step
// (diffusion/dit_step.h: label dropout and timesteps drawn on the host and
// uploaded, noise, q_sample, forward, loss, backward; under TrainLoop with
// the fused AdamW/bf16-copy/EMA update) on latents already on the device,
// timed by CUDA events:
//   bench_dit_step --device cuda[:N] [--precision bf16|fp32|tf32] [--batch 256]
//                  [--iters 10] [--warmup 3] [--scheme pre,siamese] [--peak-tflops T] [--tiny]
// DiT-L/4 on 32x32x4 latents, 1000 classes (--tiny: 8x8x4 latents, patch
// 2, hidden 32, depth 2, heads 2, 10 classes, for the emulator). One JSON
// line per scheme, then siamese/pre ratios when both ran.
// `bench_dit_step --flops` prints DiT-L/4's closed-form forward multiply-adds.
//
// CPU mode, DiT-S/4 (latent 32x32x4, 64 tokens, D 384, 12 blocks):
//   usage: bench_dit_step [batch=32] [iters=5] [scheme=pre|siamese]
// Prints one JSON line: median seconds per step and images/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backbone/optimizer_state.h"
#include "bench/model_flops.h"
#include "bench/step_bench.h"
#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "diffusion/dit_step.h"
#include "diffusion/gaussian_diffusion.h"
#include "kernels/optim.h"

using namespace vt;

namespace {

constexpr uint64_t kSeed = 20260101;

DiTConfig bench_config(bool tiny, NormScheme scheme) {
  DiTConfig c = dit_preset("DiT-L/4");
  c.input_size = 32, c.in_channels = 4, c.num_classes = 1000;
  if (tiny) c.input_size = 8, c.patch = 2, c.hidden = 32, c.depth = 2, c.heads = 2, c.num_classes = 10;
  c.scheme = scheme;
  return c;
}

// One scheme: model built and initialised on the host, moved (as
// dittrain), synthetic latents N(0, 1) and labels uploaded once, then
// dittrain's step (its per-step host draws included).
vt_bench::StepFigures run_scheme(const vt_bench::StepArgs& a, const std::string& scheme) {
  const DiTConfig c = bench_config(a.tiny, norm_scheme_from_name(scheme));
  const Device dev = a.compute.device;
  cuda_reset_peak_bytes();
  DiT model(c);
  model.init_weights(kSeed);
  model.to(dev);
  if (a.compute.bf16()) model.params().enable_bf16_copy();
  OptimizerState opt(model.params(), /*with_ema=*/true);
  const GaussianDiffusion diff = GaussianDiffusion::linear();
  const int64_t B = a.batch;
  DitStepBuffers buf = DitStepBuffers::plan(c, diff, B, dev);
  Tensor host_x0 = Tensor::empty({B, c.in_channels, c.input_size, c.input_size});
  Philox g(kSeed, 3);
  for (int64_t i = 0; i < host_x0.numel(); ++i) host_x0.f32()[i] = static_cast<float>(g.normal());
  buf.x0 = host_x0.to(dev);
  std::vector<int32_t> labels(static_cast<size_t>(B));
  for (auto& y : labels) y = static_cast<int32_t>(g.integer(0, c.num_classes - 1));
  UpdateOptions u;  // DiT's train.py: AdamW lr 1e-4, wd 0, no clipping, EMA 0.9999
  u.adamw.weight_decay = 0;
  u.ema_decay = 0.9999f;
  DitStepKeys k;
  k.seed = kSeed, k.global_batch = B;
  vt_bench::StepFns fns;
  fns.whole = [&](int64_t s) {
    std::copy(labels.begin(), labels.end(), buf.host_y.i32());  // label dropout rewrites them
    k.step = s;
    dit_forward_backward(model, buf, k);
    return buf.scalars;
  };
  // As dittrain's CUDA Graph steps: the host's draws and their upload, then
  // the fixed device part (x0 stays at one address here).
  fns.prepare = [&](int64_t s) {
    std::copy(labels.begin(), labels.end(), buf.host_y.i32());
    k.step = s;
    dit_step_draws(model, buf, k);
    return buf.scalars;
  };
  fns.body = [&] { dit_step_device(model, buf, k); };
  const vt_bench::StepRun r = vt_bench::run_steps(model.params(), opt, u, 1e-4, fns, a);
  return vt_bench::figures(r, a, scheme, vt_bench::dit_forward_macs(c), model.backbone().saved_activation_bytes(),
                           model.num_params());
}

int gpu_main(int argc, char** argv) {
  static const char* usage =
      "bench_dit_step --device cuda[:N] [--precision bf16|fp32|tf32] [--batch 256] [--iters 10] [--warmup 3] "
      "[--scheme pre,siamese] [--peak-tflops T] [--cuda-graph auto|off] [--tiny]   |   bench_dit_step --flops";
  if (argc == 2 && std::string(argv[1]) == "--flops") {
    std::printf("{\"bench\": \"dit_flops\", \"model\": \"DiT-L/4\", \"latent\": 32, \"fwd_gmac_per_img\": %.6f}\n",
                vt_bench::dit_forward_macs(bench_config(false, NormScheme::Siamese)) / 1e9);
    return 0;
  }
  vt_bench::StepArgs a;
  if (!vt_bench::parse_step_args(argc, argv, usage, a)) return 2;
  if (a.schemes.empty()) a.schemes = {"siamese"};
  try {
    apply_device_choice(a.compute);
    std::vector<vt_bench::StepFigures> all;
    for (const std::string& scheme : a.schemes) {
      all.push_back(run_scheme(a, scheme));
      const DiTConfig c = bench_config(a.tiny, norm_scheme_from_name(scheme));
      nlohmann::json head = {{"bench", "dit_step"}, {"model", a.tiny ? "tiny" : "DiT-L/4"},
                             {"latent", c.input_size}, {"in_chans", c.in_channels}, {"patch", c.patch},
                             {"dim", c.hidden}, {"depth", c.depth}, {"heads", c.heads},
                             {"mlp_hidden", static_cast<int64_t>(static_cast<double>(c.hidden) * c.mlp_ratio)},
                             {"out_chans", c.out_channels()}, {"classes", c.num_classes}, {"tokens", c.tokens()}};
      vt_bench::print_figures(head, a, all.back());
    }
    vt_bench::print_scheme_ratio("dit_scheme_ratio", all);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_dit_step: %s\n", e.what());
    return 1;
  }
  return 0;
}

int cpu_main(int argc, char** argv) {
  const int64_t B = argc > 1 ? std::atoll(argv[1]) : 32;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string scheme = argc > 3 ? argv[3] : "pre";
  DiTConfig c = dit_preset("DiT-S/4");
  c.input_size = 32, c.in_channels = 4, c.num_classes = 1000;
  c.scheme = norm_scheme_from_name(scheme);
  DiT model(c);
  ParamStore& store = model.params();
  model.init_weights(0);
  // Non-zero final/adaLN layers, as after some training (zeros would make
  // parts of the backward trivially cheap for no one).
  Philox g(1, 1);
  Tensor w = store.weights();
  for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] += static_cast<float>(1e-3 * g.normal());
  model.set_pos_embed();
  OptimizerState opt(store, /*with_ema=*/true);
  const auto diff = GaussianDiffusion::linear();
  const int64_t C = c.in_channels, S = c.input_size;
  Tensor x0 = Tensor::empty({B, C, S, S}), noise = Tensor::empty({B, C, S, S}), xt = Tensor::empty({B, C, S, S});
  Tensor out = Tensor::empty({B, 2 * C, S, S}), dout = Tensor::empty({B, 2 * C, S, S});
  Tensor tt = Tensor::empty({B}), y = Tensor::empty({B}, DType::I32);
  std::vector<int> t(static_cast<size_t>(B));
  for (int64_t i = 0; i < x0.numel(); ++i) x0.f32()[i] = static_cast<float>(g.normal()), noise.f32()[i] = static_cast<float>(g.normal());
  for (int64_t b = 0; b < B; ++b) {
    t[static_cast<size_t>(b)] = static_cast<int>(g.integer(0, 999));
    tt.f32()[b] = static_cast<float>(t[static_cast<size_t>(b)]);
    y.i32()[b] = static_cast<int32_t>(g.integer(0, 1000));
  }
  AdamWParams hp;
  hp.lr = 1e-4, hp.weight_decay = 0;
  std::vector<double> secs;
  for (int it = 0; it <= iters; ++it) {  // iteration 0 is warm-up
    const auto t0 = std::chrono::steady_clock::now();
    diff.q_sample(x0, t, noise, xt);
    model.forward(xt, tt, y, out);
    diff.training_losses(out, x0, xt, noise, t, dout);
    store.zero_grad();
    model.backward(dout);
    opt.adamw_step(hp);
    opt.update_ema(0.9999f);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (it > 0) secs.push_back(s);
  }
  std::sort(secs.begin(), secs.end());
  const double med = secs[secs.size() / 2];
  std::printf("{\"bench\": \"dit_step\", \"model\": \"DiT-S/4\", \"scheme\": \"%s\", \"batch\": %lld, "
              "\"sec_per_step\": %.4f, \"img_per_s\": %.2f, \"params\": %lld}\n",
              scheme.c_str(), static_cast<long long>(B), med, static_cast<double>(B) / med,
              static_cast<long long>(model.num_params()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return vt_bench::is_step_mode(argc, argv) ? gpu_main(argc, argv) : cpu_main(argc, argv);
}
