// CUDA Graph replay of vtrain's GPU step (train/step_graph.h) on a GPU, for
// scripts/gpu_check.sh (stage `graph`). A small DeiT — deit_tiny's width
// and depth (192, 12 blocks, SiameseNorm) at 64 px (16 patches + the class
// token), so the step is bound by its launches — trains `steps` steps of
// synthetic batches twice from the same initialisation: eagerly, and with
// the device part (zero_grad, forward, cross-entropy, backward, the device
// update with clipping, AdamW and EMA) captured once and replayed by
// StepGraph, as TrainLoop runs it for train.cuda_graph: auto. Each step's
// batch is copied into fixed buffers and its learning rate (a ramp, new
// every step) written to the device before the launch (DeviceUpdate::
// set_step). The first kWarm steps of each run are untimed (workspaces, the
// capture); the timed steps end with the one device->host read of their
// records.
//
// Prints the losses of both runs, the largest relative loss difference and
// the largest |difference| of the weights, steps/s of each and their ratio
// (graph / eager). PASS when the graph was launched for every timed step
// and the losses and weights agree within 1e-6 relative (bit-identical is
// expected: the same kernels with the same arguments in the same order).
//   usage: check_graph_step [steps=50] [batch=32] [fp32|bf16 (default fp32)]
// Exit: 0 PASS, 1 FAIL, 2 bad arguments, 3 an error (no GPU, ...).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "backbone/optimizer_state.h"
#include "core/allocator.h"
#include "core/philox.h"
#include "kernels/cross_entropy.h"
#include "train/device_update.h"
#include "train/nonfinite.h"
#include "train/step_graph.h"
#include "vision/vit.h"

using namespace vt;

namespace {

constexpr uint64_t kSeed = 20261202;
constexpr int kWarm = 3;       // untimed steps per run: planning, then the capture
constexpr int kBatches = 4;    // distinct synthetic batches, cycled

struct Run {
  std::vector<double> losses;  // timed steps
  Tensor weights;              // host, after the last step
  double steps_per_s = 0;
  int64_t replays = 0;         // graph launches in the timed steps
};

Run train(const VitConfig& cfg, bool graph, bool bf16, int steps, int64_t B, const std::vector<Tensor>& host_images,
          const std::vector<Tensor>& host_labels) {
  const Device dev = Device::cuda(0);
  VisionTransformer model(cfg);
  model.init(kSeed);
  model.to(dev);
  if (bf16) model.params().enable_bf16_copy();
  ParamStore& ps = model.params();
  OptimizerState opt(ps, /*with_ema=*/true);
  NonFiniteGuard guard(0);
  UpdateOptions uo;
  uo.adamw.weight_decay = 0.05;
  uo.clip_grad = 1.0;
  uo.ema_decay = 0.9999f;
  DeviceUpdate update(ps, opt, guard, uo, kWarm + steps);
  const int64_t K = cfg.num_classes;
  Tensor images = Tensor::empty(host_images[0].shape(), DType::F32, dev);
  Tensor labels = Tensor::empty({B}, DType::I32, dev);
  Tensor logits = Tensor::empty({B, K}, DType::F32, dev), dlogits = Tensor::empty({B, K}, DType::F32, dev);
  Tensor stats = Tensor::zeros({2}, DType::F32, dev);
  StepGraph g;
  auto step = [&](int s) {
    images.copy_from(host_images[static_cast<size_t>(s % kBatches)]);
    labels.copy_from(host_labels[static_cast<size_t>(s % kBatches)]);
    update.set_step(stats, 5e-4 * s / (kWarm + steps));
    auto work = [&] {
      ps.zero_grad();
      model.forward(images, logits, /*training=*/true, kSeed, 0);
      cross_entropy_to_stats(logits, labels, 0.1f, dlogits, stats);
      model.backward(dlogits);
      update.launch_fixed(stats);
    };
    if (graph) g.run(work, "");
    else work();
    update.commit();
  };
  for (int s = 1; s <= kWarm; ++s) step(s);
  update.read();  // waits for the warm-up steps
  const int64_t replays0 = g.replays();
  const auto t0 = std::chrono::steady_clock::now();
  for (int s = kWarm + 1; s <= kWarm + steps; ++s) step(s);
  const std::vector<DeviceUpdate::Record> recs = update.read();  // waits for the timed steps
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Run r;
  for (const auto& rec : recs) r.losses.push_back(rec.scalars.at(0));
  r.weights = ps.weights().to(Device::cpu());
  r.steps_per_s = steps / secs;
  r.replays = g.replays() - replays0;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = argc > 1 ? std::atoi(argv[1]) : 50;
  const int64_t B = argc > 2 ? std::atoll(argv[2]) : 32;
  const std::string prec = argc > 3 ? argv[3] : "fp32";
  if (steps < 1 || B < 1 || (prec != "fp32" && prec != "bf16")) {
    std::fprintf(stderr, "usage: check_graph_step [steps=50 >= 1] [batch=32 >= 1] [fp32|bf16]\n");
    return 2;
  }
  try {
    const CudaDeviceInfo info = cuda_device_info(0);
    VitConfig cfg = vit_preset("deit_tiny", NormScheme::Siamese, 0.0f, 1000);
    cfg.img_size = 64;
    cfg.validate();
    std::printf("check_graph_step: deit_tiny siamese img 64, batch %lld, %s, %d timed steps; cuda:0 %s\n",
                static_cast<long long>(B), prec.c_str(), steps, info.name.c_str());
    std::vector<Tensor> host_images, host_labels;
    for (int i = 0; i < kBatches; ++i) {
      Philox p(kSeed, philox_stream(0xC4A90001, static_cast<uint64_t>(i)));
      Tensor x = Tensor::empty({B, cfg.in_chans, cfg.img_size, cfg.img_size}), y = Tensor::empty({B}, DType::I32);
      for (int64_t j = 0; j < x.numel(); ++j) x.f32()[j] = static_cast<float>(p.normal(0.0, 1.0));
      for (int64_t j = 0; j < B; ++j) y.i32()[j] = static_cast<int32_t>(p.integer(0, cfg.num_classes - 1));
      host_images.push_back(x);
      host_labels.push_back(y);
    }
    const bool bf16 = prec == "bf16";
    const Run eager = train(cfg, false, bf16, steps, B, host_images, host_labels);
    const Run graph = train(cfg, true, bf16, steps, B, host_images, host_labels);
    double worst = 0;
    for (size_t i = 0; i < eager.losses.size(); ++i) {
      const double d = std::fabs(graph.losses[i] - eager.losses[i]) / std::max(std::fabs(eager.losses[i]), 1e-12);
      worst = std::max(worst, std::isnan(d) ? INFINITY : d);
      if (i < 3 || i + 1 == eager.losses.size())
        std::printf("step %zu: loss eager %.9g graph %.9g\n", i + 1 + kWarm, eager.losses[i], graph.losses[i]);
    }
    double wdiff = 0;
    const float *a = eager.weights.f32(), *b = graph.weights.f32();
    for (int64_t i = 0; i < eager.weights.numel(); ++i)
      wdiff = std::max(wdiff, std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::fabs(static_cast<double>(a[i]))));
    std::printf("max relative loss difference %.3g, max weight difference %.3g\n", worst, wdiff);
    std::printf("steps/s: eager %.1f, graph %.1f, ratio %.2f (graph launches in the timed steps: %lld of %d)\n",
                eager.steps_per_s, graph.steps_per_s, graph.steps_per_s / eager.steps_per_s,
                static_cast<long long>(graph.replays), steps);
    const bool ok = graph.replays == steps && worst <= 1e-6 && wdiff <= 1e-6;
    if (graph.replays != steps) std::printf("the step was not replayed as a graph (the log line above says why)\n");
    std::printf("check_graph_step: %s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_graph_step: %s\n", e.what());
    return 3;
  }
}
