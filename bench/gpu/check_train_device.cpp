// CPU-vs-GPU agreement of vtrain's step at real size, for a machine with a
// GPU (scripts/gpu_check.sh). The model of configs/deit_s_siamese.yaml
// (deit_small, img 224, SiameseNorm, drop path 0.1, 1000 classes) trains
// `steps` steps of `batch` synthetic images (Philox, keyed by the seed and
// step) on the CPU in fp32 and on cuda:0 in the asked precision, with the
// trainer's calls: label-smoothing cross-entropy (0.1), drop path, global
// gradient-norm clipping (1.0), AdamW, EMA. Both start from the same
// initialisation (made on the host, then moved).
//
// Prints every step's losses and relative difference, the largest relative
// loss difference, and the largest |difference| of weights, EMA and AdamW
// moments after the last step. Exit status 1 when the loss difference
// exceeds the tolerance (fp32: 1e-4, bf16: 2e-2 relative), 2 for bad
// arguments or no GPU.
//   usage: check_train_device [steps=5] [batch=8] [fp32|bf16 (default: both)]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backbone/optimizer_state.h"
#include "core/allocator.h"
#include "core/philox.h"
#include "kernels/cross_entropy.h"
#include "kernels/optim.h"
#include "vision/vit.h"

using namespace vt;

namespace {

constexpr uint64_t kSeed = 20260101;

struct Run {
  std::vector<double> losses;
  Tensor weights, ema, exp_avg, exp_avg_sq;  // on the host, after the last step
};

// Batch `step`: images N(0, 1) (normalised pixels) and uniform labels.
void synthetic_batch(int64_t step, Tensor& images, Tensor& labels, int64_t K) {
  Philox g(kSeed, philox_stream(0xC4EC0001, static_cast<uint64_t>(step)));
  float* x = images.f32();
  for (int64_t i = 0; i < images.numel(); ++i) x[i] = static_cast<float>(g.normal(0.0, 1.0));
  for (int64_t i = 0; i < labels.numel(); ++i) labels.i32()[i] = static_cast<int32_t>(g.integer(0, K - 1));
}

Run train(const VitConfig& cfg, Device dev, bool bf16, int steps, int64_t B) {
  VisionTransformer model(cfg);
  model.init(kSeed);
  model.to(dev);
  if (bf16) model.params().enable_bf16_copy();
  ParamStore& ps = model.params();
  OptimizerState opt(ps, /*with_ema=*/true);
  const int64_t K = cfg.num_classes, S = cfg.img_size;
  Tensor host_images = Tensor::empty({B, cfg.in_chans, S, S}), host_labels = Tensor::empty({B}, DType::I32);
  Tensor images = Tensor::empty(host_images.shape(), DType::F32, dev), labels = Tensor::empty({B}, DType::I32, dev);
  Tensor logits = Tensor::empty({B, K}, DType::F32, dev), dlogits = Tensor::empty({B, K}, DType::F32, dev);
  AdamWParams hp;
  hp.lr = 5e-4, hp.weight_decay = 0.05;
  Run r;
  for (int s = 1; s <= steps; ++s) {
    synthetic_batch(s, host_images, host_labels, K);
    images.copy_from(host_images);
    labels.copy_from(host_labels);
    ps.zero_grad();
    model.forward(images, logits, /*training=*/true, kSeed, static_cast<uint64_t>(s));
    const CrossEntropyResult ce = cross_entropy_forward_backward(logits, labels, 0.1f, dlogits);
    model.backward(dlogits);
    clip_grad_norm(ps.grads(), 1.0);
    opt.adamw_step(hp);
    opt.update_ema(0.99996f);
    r.losses.push_back(ce.loss);
  }
  r.weights = ps.weights().to(Device::cpu());
  r.ema = opt.ema().to(Device::cpu());
  r.exp_avg = opt.exp_avg().to(Device::cpu());
  r.exp_avg_sq = opt.exp_avg_sq().to(Device::cpu());
  if (dev.is_cuda())
    std::printf("  peak GPU memory %.2f GiB\n", static_cast<double>(cuda_peak_bytes_in_use()) / (1 << 30));
  return r;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  double m = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(static_cast<double>(a.f32()[i]) - b.f32()[i]);
    m = std::isnan(d) ? INFINITY : std::max(m, d);
  }
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  const int64_t B = argc > 2 ? std::atoll(argv[2]) : 8;
  const std::string which = argc > 3 ? argv[3] : "both";
  if (steps < 1 || B < 1 || (which != "fp32" && which != "bf16" && which != "both")) {
    std::fprintf(stderr, "usage: check_train_device [steps=5] [batch=8] [fp32|bf16 (default: both)]\n");
    return 2;
  }
  if (!cuda_available()) {
    std::fprintf(stderr, "check_train_device: no CUDA device is visible\n");
    return 2;
  }
  const CudaDeviceInfo info = cuda_device_info(0);
  const VitConfig cfg = vit_preset("deit_small", NormScheme::Siamese, 0.1f, 1000);
  std::printf("check_train_device: deit_small siamese img 224, batch %lld, %d steps; cuda:0 %s\n",
              static_cast<long long>(B), steps, info.name.c_str());
  const Run cpu = train(cfg, Device::cpu(), false, steps, B);
  bool ok = true;
  for (const char* p : {"fp32", "bf16"}) {
    const std::string prec = p;
    if (which != "both" && which != prec) continue;
    const double tol = prec == "fp32" ? 1e-4 : 2e-2;
    const Run gpu = train(cfg, Device::cuda(0), prec == "bf16", steps, B);
    double worst = 0;
    for (int s = 0; s < steps; ++s) {
      const double rel = std::fabs(gpu.losses[s] - cpu.losses[s]) / std::max(std::fabs(cpu.losses[s]), 1e-12);
      worst = std::isnan(rel) ? INFINITY : std::max(worst, rel);
      std::printf("  %s step %d: loss cpu %.8f cuda %.8f rel diff %.3g\n", prec.c_str(), s + 1, cpu.losses[s],
                  gpu.losses[s], rel);
    }
    std::printf("%s: max relative loss difference %.3g (tolerance %.0e) | max |diff| weights %.3g, ema %.3g, "
                "exp_avg %.3g, exp_avg_sq %.3g\n",
                prec.c_str(), worst, tol, max_abs_diff(gpu.weights, cpu.weights), max_abs_diff(gpu.ema, cpu.ema),
                max_abs_diff(gpu.exp_avg, cpu.exp_avg), max_abs_diff(gpu.exp_avg_sq, cpu.exp_avg_sq));
    if (!(worst <= tol)) {
      std::printf("%s: FAIL (loss difference beyond tolerance)\n", prec.c_str());
      ok = false;
    }
  }
  std::printf("check_train_device: %s\n", ok ? "PASS" : "FAIL");
  return ok ? 0 : 1;
}
