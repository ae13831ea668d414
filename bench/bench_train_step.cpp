// One DeiT/ViT training step (forward with drop-path, label-smoothing
// cross-entropy, backward, AdamW, EMA), as vtrain runs it, on synthetic
// images; the data pipeline is not timed.
//
// GPU mode (any --flag; bench/step_bench.h): vtrain's own step
// (vision/train_step.h under TrainLoop: the fused AdamW/bf16-copy/EMA update,
// deferred reads) on images already on the device, label-smoothing
// cross-entropy without Mixup (as tools/bench_timm_step.py's timm step),
// timed by CUDA events:
//   bench_train_step --device cuda[:N] [--precision bf16|fp32|tf32] [--batch 256]
//                    [--iters 10] [--warmup 3] [--scheme pre,siamese] [--peak-tflops T] [--tiny]
// DeiT-S (deit_small, 224 px, 1000 classes, drop path 0.1; --tiny: img 32,
// patch 8, dim 32, depth 2, heads 2, 10 classes, for the emulator). One JSON
// line per scheme (img/s, step ms, MFU, peak memory, saved activations),
// then siamese/pre ratios when both ran. `bench_train_step --flops` prints
// the closed-form forward multiply-adds of DeiT-S (bench/model_flops.h).
//
// CPU mode:
//   usage: bench_train_step [preset=deit_small] [batch=32] [iters=5] [img=224] [scheme=pre]
//   preset: deit_tiny | deit_small | deit_base | cifar (the model of
//   configs/cifar10_vit_tiny_*.yaml: img 32, patch 4, dim 96, depth 5, heads 3, MLP ratio 2)
// Run with OMP_WAIT_POLICY=passive on a shared machine (see vision/main/vtrain_main.cpp).
// Prints one JSON line: median and best seconds per step, images/s (from the
// median), peak resident memory (ru_maxrss) and threads. tools/bench_timm_step.py
// runs this and timm's deit_small_patch16_224 in PyTorch and prints the ratio.
#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backbone/optimizer_state.h"
#include "bench/model_flops.h"
#include "bench/step_bench.h"
#include "bench/vit_bench_step.h"
#include "core/philox.h"
#include "kernels/cross_entropy.h"
#include "kernels/optim.h"
#include "vision/train_step.h"
#include "vision/vit.h"

using namespace vt;

namespace {

// One scheme: vtrain's step on synthetic images (bench/vit_bench_step.h).
vt_bench::StepFigures run_scheme(const vt_bench::StepArgs& a, const std::string& scheme) {
  cuda_reset_peak_bytes();
  vt_bench::VitBenchStep st(a, norm_scheme_from_name(scheme));
  const vt_bench::StepRun r = vt_bench::run_steps(st.model.params(), *st.opt, st.update, 5e-4, st.fns(), a);
  return vt_bench::figures(r, a, scheme, vt_bench::vit_forward_macs(st.cfg), st.model.backbone().saved_activation_bytes(),
                           st.model.params().numel());
}

int gpu_main(int argc, char** argv) {
  static const char* usage =
      "bench_train_step --device cuda[:N] [--precision bf16|fp32|tf32] [--batch 256] [--iters 10] [--warmup 3] "
      "[--scheme pre,siamese] [--peak-tflops T] [--cuda-graph auto|off] [--tiny]   |   bench_train_step --flops";
  if (argc == 2 && std::string(argv[1]) == "--flops") {
    const VitConfig c = vt_bench::vit_bench_config(false, NormScheme::Siamese);
    std::printf("{\"bench\": \"vtrain_flops\", \"preset\": \"deit_small\", \"img\": %lld, \"fwd_gmac_per_img\": %.6f}\n",
                static_cast<long long>(c.img_size), vt_bench::vit_forward_macs(c) / 1e9);
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
      const VitConfig c = vt_bench::vit_bench_config(a.tiny, norm_scheme_from_name(scheme));
      nlohmann::json head = {{"bench", "vtrain_train_step"}, {"preset", a.tiny ? "tiny" : "deit_small"},
                             {"img", c.img_size}, {"patch", c.patch_size}, {"in_chans", c.in_chans},
                             {"dim", c.backbone.dim}, {"depth", c.backbone.depth}, {"heads", c.backbone.heads},
                             {"mlp_hidden", c.backbone.hidden()}, {"classes", c.num_classes}, {"tokens", c.tokens()}};
      vt_bench::print_figures(head, a, all.back());
    }
    vt_bench::print_scheme_ratio("vtrain_scheme_ratio", all);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_train_step: %s\n", e.what());
    return 1;
  }
  return 0;
}

int cpu_main(int argc, char** argv) {
  const std::string preset = argc > 1 ? argv[1] : "deit_small";
  const int64_t B = argc > 2 ? std::atoll(argv[2]) : 32;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 5;
  const std::string scheme = argc > 5 ? argv[5] : "pre";
  VitConfig cfg;
  if (preset == "cifar") {
    cfg.img_size = 32, cfg.patch_size = 4;
    cfg.backbone.dim = 96, cfg.backbone.depth = 5, cfg.backbone.heads = 3, cfg.backbone.mlp_ratio = 2.0;
    cfg.num_classes = 10;
  } else {
    cfg = vit_preset(preset, NormScheme::Pre, 0.1f, 1000);
    cfg.img_size = argc > 4 ? std::atoll(argv[4]) : 224;
  }
  cfg.backbone.scheme = norm_scheme_from_name(scheme);
  VisionTransformer model(cfg);
  model.init(0);
  ParamStore& ps = model.params();
  const int64_t K = cfg.num_classes;
  OptimizerState opt(ps, /*with_ema=*/true);
  Tensor images = Tensor::empty({B, 3, cfg.img_size, cfg.img_size});
  Philox g(1, 2);
  for (int64_t i = 0; i < images.numel(); ++i) images.f32()[i] = static_cast<float>(g.normal());
  Tensor labels = Tensor::empty({B}, DType::I32);
  for (int64_t i = 0; i < B; ++i) labels.i32()[i] = static_cast<int32_t>(g.next_u64() % static_cast<uint64_t>(K));
  Tensor logits = Tensor::empty({B, K}), dlogits = Tensor::empty({B, K});
  AdamWParams hp;
  hp.lr = 5e-4, hp.weight_decay = 0.05;
  std::vector<double> times;
  for (int it = 0; it <= iters; ++it) {  // iteration 0 warms up (workspace planning)
    const auto t0 = std::chrono::steady_clock::now();
    ps.zero_grad();
    model.forward(images, logits, true, 0, static_cast<uint64_t>(it));
    cross_entropy_forward_backward(logits, labels, 0.1f, dlogits);
    model.backward(dlogits);
    opt.adamw_step(hp);
    opt.update_ema(0.99996f);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (it > 0) times.push_back(s);
  }
  std::sort(times.begin(), times.end());
  const double med = times[times.size() / 2];
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("{\"bench\": \"vtrain_train_step\", \"preset\": \"%s\", \"scheme\": \"%s\", \"img\": %lld, \"batch\": %lld, "
              "\"threads\": %d, \"median_s\": %.4f, \"best_s\": %.4f, \"img_per_s\": %.2f, \"peak_rss_mb\": %.1f}\n",
              preset.c_str(), scheme.c_str(), static_cast<long long>(cfg.img_size), static_cast<long long>(B),
              omp_get_max_threads(), med, times.front(), static_cast<double>(B) / med, ru.ru_maxrss / 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return vt_bench::is_step_mode(argc, argv) ? gpu_main(argc, argv) : cpu_main(argc, argv);
}
