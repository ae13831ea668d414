// One DeiT/ViT training step on CPU (forward with drop-path, label-smoothing
// soft-target cross-entropy, backward, AdamW, EMA), as vtrain runs it, on
// synthetic images; the data pipeline is not timed.
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
#include "core/philox.h"
#include "kernels/cross_entropy.h"
#include "kernels/optim.h"
#include "vision/vit.h"

using namespace vt;

int main(int argc, char** argv) {
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
