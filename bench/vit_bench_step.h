// vtrain's DeiT step on the GPU as the benchmarks run it (bench_train_step's
// GPU mode on synthetic images; bench/gpu/bench_input on real batches): the
// model built and initialised on the host and moved (as vtrain), N(0, 1)
// images and random labels uploaded once, label-smoothing cross-entropy
// without Mixup (as tools/bench_timm_step.py's timm step), and the step
// functions for vt_bench::run_steps (bench/step_bench.h), eager or as CUDA
// Graph steps: the images stay at one address and the drop-path kernels
// read the step from the device (as vision/trainer.cpp prepare_split), so
// a caller that feeds real batches copies them into in.images / in.labels.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>

#include "backbone/optimizer_state.h"
#include "bench/step_bench.h"
#include "core/philox.h"
#include "train/update_step.h"
#include "vision/train_step.h"
#include "vision/vit.h"

namespace vt_bench {

// DeiT-S (deit_small, 224 px, 1000 classes, drop path 0.1); tiny: img 32,
// patch 8, dim 32, depth 2, heads 2, 10 classes (the emulator's size).
inline vt::VitConfig vit_bench_config(bool tiny, vt::NormScheme scheme) {
  vt::VitConfig cfg = vt::vit_preset("deit_small", scheme, 0.1f, 1000);
  if (tiny) {
    cfg.img_size = 32, cfg.patch_size = 8, cfg.num_classes = 10;
    cfg.backbone.dim = 32, cfg.backbone.depth = 2, cfg.backbone.heads = 2;
    cfg.backbone.drop_path = {0.0f, 0.1f};
  }
  return cfg;
}

struct VitBenchStep {
  static constexpr uint64_t kSeed = 20260101;
  vt::VitConfig cfg;
  vt::VisionTransformer model;
  std::unique_ptr<vt::OptimizerState> opt;  // made once the model is on its device
  vt::UpdateOptions update;  // DeiT's recipe: AdamW wd 0.05, no clipping, EMA 0.99996
  vt::VitStepInputs in;      // images F32 [B, 3, S, S], labels I32 [B], on the device
  vt::VitStepBuffers buf;
  vt::Tensor step_number, host_step;

  // Call cuda_reset_peak_bytes() before, for a peak from the model's build on.
  // min_classes: at least that many classes (real labels must fit).
  VitBenchStep(const StepArgs& a, vt::NormScheme scheme, int64_t min_classes = 0)
      : cfg(with_classes(vit_bench_config(a.tiny, scheme), min_classes)), model(cfg) {
    const vt::Device dev = a.compute.device;
    model.init(kSeed);
    model.to(dev);
    if (a.compute.bf16()) model.params().enable_bf16_copy();
    opt = std::make_unique<vt::OptimizerState>(model.params(), /*with_ema=*/true);
    const int64_t B = a.batch, K = cfg.num_classes, S = cfg.img_size;
    vt::Tensor images = vt::Tensor::empty({B, cfg.in_chans, S, S}), labels = vt::Tensor::empty({B}, vt::DType::I32);
    vt::Philox g(kSeed, 2);
    for (int64_t i = 0; i < images.numel(); ++i) images.f32()[i] = static_cast<float>(g.normal());
    for (int64_t i = 0; i < B; ++i) labels.i32()[i] = static_cast<int32_t>(g.integer(0, K - 1));
    in.images = images.to(dev), in.labels = labels.to(dev);
    in.label_smoothing = 0.1, in.seed = kSeed;
    buf = vt::VitStepBuffers::plan(B, K, dev);
    update.adamw.weight_decay = 0.05;
    update.ema_decay = 0.99996f;
    step_number = vt::Tensor::zeros({1}, vt::DType::I64, dev);
    host_step = vt::Tensor::empty({1}, vt::DType::I64);
    model.backbone().set_step_source(step_number);
  }

  // The step functions; `feed(s)`, when set, runs first in step s's host
  // part (it may overwrite in.images and in.labels, keeping their addresses).
  StepFns fns(std::function<void(int64_t)> feed = {}) {
    StepFns f;
    auto host_part = [this, feed](int64_t s) {
      if (feed) feed(s);
      static_cast<int64_t*>(host_step.raw())[0] = s;
      step_number.copy_from(host_step);
      in.step = static_cast<uint64_t>(s);
    };
    f.whole = [this, host_part](int64_t s) {
      host_part(s);
      vt::vit_device_forward_backward(model, in, buf);
      return buf.stats;
    };
    f.prepare = [this, host_part](int64_t s) {
      host_part(s);
      return buf.stats;
    };
    f.body = [this] { vt::vit_device_body(model, in, buf); };
    return f;
  }

 private:
  static vt::VitConfig with_classes(vt::VitConfig c, int64_t min_classes) {
    c.num_classes = std::max<int64_t>(c.num_classes, min_classes);
    return c;
  }
};

}  // namespace vt_bench
