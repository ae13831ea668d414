// CPU-vs-GPU agreement of vtrain's step at real size, for a machine with a
// GPU (scripts/gpu_check.sh). The model of configs/deit_s_siamese.yaml
// (deit_small, img 224, SiameseNorm, drop path 0.1, 1000 classes) trains
// `steps` steps of `batch` synthetic images (Philox, keyed by the seed and
// step) on the CPU in fp32 and on cuda:0 in the asked precision, as vtrain
// runs them: label-smoothing cross-entropy (0.1), drop path, and the update
// of the trainers' loop (train/loop.h, via bench/loop_task.h: global
// gradient-norm clipping (1.0), AdamW, EMA; on the GPU the fused device
// update with deferred reads); the GPU step is vtrain's own
// (vision/train_step.h). Both start from the same initialisation (made on
// the host, then moved).
//
// Prints every step's losses and relative difference, the largest relative
// loss difference, and the largest |difference| of weights, EMA and AdamW
// moments after the last step. Command line, tolerances and exit status:
// bench/gpu/agreement.h.
//   usage: check_train_device [steps=5] [batch=8] [fp32|bf16 (default: both)]
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
#include "kernels/cross_entropy.h"
#include "kernels/optim.h"
#include "vision/train_step.h"
#include "vision/vit.h"

using namespace vt;

namespace {

constexpr uint64_t kSeed = 20260101;

struct Run {
  std::vector<double> losses;
  Tensor weights, ema, exp_avg, exp_avg_sq;  // on the host, after the last step
  agreement::DeviceFigures figures;          // GPU runs
};

// Batch `step`: images N(0, 1) (normalised pixels) and uniform labels.
void synthetic_batch(int64_t step, Tensor& images, Tensor& labels, int64_t K) {
  Philox g(kSeed, philox_stream(0xC4EC0001, static_cast<uint64_t>(step)));
  float* x = images.f32();
  for (int64_t i = 0; i < images.numel(); ++i) x[i] = static_cast<float>(g.normal(0.0, 1.0));
  for (int64_t i = 0; i < labels.numel(); ++i) labels.i32()[i] = static_cast<int32_t>(g.integer(0, K - 1));
}

Run train(const VitConfig& cfg, Device dev, bool bf16, int steps, int64_t B) {
  const AttentionCalls begin = agreement::begin_figures();
  VisionTransformer model(cfg);
  model.init(kSeed);
  model.to(dev);
  if (bf16) model.params().enable_bf16_copy();
  ParamStore& ps = model.params();
  OptimizerState opt(ps, /*with_ema=*/true);
  const int64_t K = cfg.num_classes, S = cfg.img_size;
  Tensor host_images = Tensor::empty({B, cfg.in_chans, S, S}), host_labels = Tensor::empty({B}, DType::I32);
  Tensor images = Tensor::empty(host_images.shape(), DType::F32, dev), labels = Tensor::empty({B}, DType::I32, dev);
  VitStepBuffers buf = VitStepBuffers::plan(B, K, dev);
  UpdateOptions u;
  u.clip_grad = 1.0;
  u.adamw.weight_decay = 0.05;
  u.ema_decay = 0.99996f;
  vt_bench::FunctionStepTask task([&](int64_t s) {
    synthetic_batch(s, host_images, host_labels, K);
    images.copy_from(host_images);
    labels.copy_from(host_labels);
    StepTask::Output out;
    out.lr = 5e-4;
    if (dev.is_cpu()) {  // vtrain's CPU step (vision/trainer.cpp without Mixup)
      ps.zero_grad();
      model.forward(images, buf.logits, /*training=*/true, kSeed, static_cast<uint64_t>(s));
      out.loss = cross_entropy_forward_backward(buf.logits, labels, 0.1f, buf.dlogits).loss;
      model.backward(buf.dlogits);
    } else {
      VitStepInputs in;
      in.images = images, in.labels = labels, in.label_smoothing = 0.1;
      in.seed = kSeed, in.step = static_cast<uint64_t>(s);
      vit_device_forward_backward(model, in, buf);
      out.scalars = buf.stats;
    }
    return out;
  });
  vt_bench::LoopHarness(ps, opt, u).run(task, 0, steps);
  Run r;
  r.losses = task.losses;
  r.weights = ps.weights().to(Device::cpu());
  r.ema = opt.ema().to(Device::cpu());
  r.exp_avg = opt.exp_avg().to(Device::cpu());
  r.exp_avg_sq = opt.exp_avg_sq().to(Device::cpu());
  r.figures = agreement::end_figures(begin, model.backbone().saved_activation_bytes());
  return r;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  return agreement::max_abs_diff(a.f32(), b.f32(), a.numel());
}

}  // namespace

int main(int argc, char** argv) {
  agreement::Args args;
  if (const int rc = agreement::parse(argc, argv, "check_train_device", 8, args)) return rc;
  const int steps = args.steps;
  const int64_t B = args.batch;
  try {
    const CudaDeviceInfo info = cuda_device_info(0);
    const VitConfig cfg = vit_preset("deit_small", NormScheme::Siamese, 0.1f, 1000);
    std::printf("check_train_device: deit_small siamese img 224, batch %lld, %d steps; cuda:0 %s\n",
                static_cast<long long>(B), steps, info.name.c_str());
    const Run cpu = train(cfg, Device::cpu(), false, steps, B);
    bool ok = true;
    for (const std::string& prec : args.precisions) {
      const Run gpu = train(cfg, Device::cuda(0), prec == "bf16", steps, B);
      const double worst = agreement::compare_losses(prec, cpu.losses, gpu.losses);
      std::printf("%s: max |diff| weights %.3g, ema %.3g, exp_avg %.3g, exp_avg_sq %.3g\n", prec.c_str(),
                  max_abs_diff(gpu.weights, cpu.weights), max_abs_diff(gpu.ema, cpu.ema),
                  max_abs_diff(gpu.exp_avg, cpu.exp_avg), max_abs_diff(gpu.exp_avg_sq, cpu.exp_avg_sq));
      ok = agreement::verdict(prec, worst) && ok;
      ok = agreement::attention_verdict(prec, gpu.figures) && ok;
    }
    std::printf("check_train_device: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_train_device: %s\n", e.what());
    return 3;
  }
}
