// dittrain's whole step and `sample` on emulated CUDA (tests/cuda/emu)
// against the same code on the CPU: a tiny DiT (SiameseNorm, label dropout, the t = 0 likelihood term, gradient clipping and EMA on)
// trains 10 steps; the CPU run is the oracle. fp32: the loss of every step
// within 1e-5 relative and every parameter, EMA weight and AdamW moment
// within 1e-5 after 10 steps; bf16 (GEMMs and activations, attention on bf16
// q/k/v in every step) keeps the losses within 2e-2. A CPU
// checkpoint resumed on the GPU continues with the CPU's losses, and DDIM
// sampling of the trained model (classifier-free guidance on, eta > 0, so
// guidance and noise both count) gives the CPU sampler's latents. A NaN
// latent makes step 3 non-finite: with train.max_nonfinite 0 the GPU run
// (which reads its step records once per log interval) stops naming step 3
// with the weights of step 2, and with 1 it skips step 3 as the CPU does
// and ends with the CPU's checkpoint and metrics records.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/npz.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "data_pipeline/sampler.h"
#include "diffusion/dit_trainer.h"
#include "diffusion/sampler.h"
#include "../emu_trace.h"
#include "train_emu_util.h"
#include "vision_test_util.h"

namespace vt {
namespace {

// 16 latents [4, 8, 8] (3 classes) in one shard; batch 4: 4 steps an epoch,
// so 10 steps cross two epoch boundaries.
class DitTrainEmu : public ::testing::Test {
 protected:
  void SetUp() override { vt_test::write_tiny_latents(data(), 16); }
  std::string data() const { return tmp_.path() + "/lat"; }
  std::string out(const std::string& run) const { return tmp_.path() + "/" + run; }
  DitTrainConfig cfg(const std::string& run, const std::string& scheme, const std::vector<std::string>& ov) const {
    const std::string yaml = "name: t\nout_dir: " + out(run) + "\nseed: 9\nresume: auto\nthreads: 1\n" +
                             "model: {input_size: 8, in_channels: 4, patch: 2, hidden: 16, depth: 2, heads: 2, "
                             "num_classes: 3, class_dropout: 0.25, norm: {scheme: " + scheme + "}}\n"
                             "data: {kind: latents, root: " + data() + ", workers: 1}\n"
                             "train: {batch_size: 4, steps: 10, lr: 2.0e-3, ema_decay: 0.9, clip_grad: 0.5}\n"
                             "log: {every_steps: 5, tensorboard: false}\nckpt: {every_steps: 100}\nsample: {every: 0}\n";
    return dit_train_config(Config::parse(yaml, dittrain_schema(), ov, "test.yaml", "."));
  }
  std::vector<double> train(const std::string& run, const std::string& scheme, const std::vector<std::string>& ov) {
    DitTrainer t(cfg(run, scheme, ov));
    t.train();
    std::vector<double> l;
    for (const auto& sl : t.losses()) l.push_back(sl.second);
    return l;
  }
  std::string file(const std::string& run, int step, const std::string& f) const {
    return out(run) + "/t/step_" + std::to_string(step) + "/" + f;
  }
  void expect_fp32_agreement(const std::string& scheme) {
    const auto cpu = train("cpu", scheme, {"device=cpu"});
    const auto gpu = train("gpu", scheme, {"device=cuda", "precision=fp32"});
    ASSERT_EQ(cpu.size(), 10u);
    vt_test::expect_losses_close(gpu, cpu, 1e-5, scheme + " fp32");
    for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"}) {
      std::string worst;
      const double d = vt_test::max_abs_diff(file("gpu", 10, f), file("cpu", 10, f), &worst);
      EXPECT_LE(d, 1e-5) << scheme << " " << f << ": largest difference in " << worst;
    }
  }
  vt_test::TmpDir tmp_;
};

// SiameseNorm only: the DiT-specific code (embeddings, adaLN, final layer,
// diffusion) does not depend on the scheme, and the Pre-Norm trunk on
// emulated CUDA is covered by the DeiT test; each emulated run costs about
// a minute on 2 cores.
TEST_F(DitTrainEmu, SiameseFp32MatchesCpu) { expect_fp32_agreement("siamese"); }

TEST_F(DitTrainEmu, SiameseBf16LossesWithinTolerance) {
  const auto cpu = train("cpu", "siamese", {"device=cpu"});
  std::vector<double> gpu;
  const AttentionCalls calls = vt_test::attention_calls_during(
      // Eager steps: the counters count host calls, which a CUDA Graph replay does not make.
      [&] { gpu = train("gpu", "siamese", {"device=cuda", "precision=bf16", "train.cuda_graph=off"}); });
  vt_test::expect_losses_close(gpu, cpu, 2e-2, "siamese bf16");
  EXPECT_NE(gpu, cpu);  // the bf16 GEMMs really ran
  vt_test::expect_bf16_attention(calls, 10 * 2);  // 10 steps x depth 2
}

TEST_F(DitTrainEmu, CpuCheckpointResumesOnGpu) {
  const auto full = train("cpu", "siamese", {"device=cpu"});
  const auto first = train("moved", "siamese", {"device=cpu", "train.max_steps=5"});
  ASSERT_EQ(first.size(), 5u);
  const auto rest = train("moved", "siamese", {"device=cuda", "precision=fp32"});  // resumes step 5
  vt_test::expect_losses_close(rest, std::vector<double>(full.begin() + 5, full.end()), 1e-5, "resumed on cuda", 6);
  EXPECT_LE(vt_test::max_abs_diff(file("moved", 10, "ema.safetensors"), file("cpu", 10, "ema.safetensors")), 1e-5);
}

// "... at step K (epoch E); stopping after ..." -> "at step K (epoch E)".
std::string stop_step(const std::string& msg) {
  const size_t a = msg.find(" at step "), b = msg.find(';', a);
  return a == std::string::npos || b == std::string::npos ? "(no step in: " + msg + ")" : msg.substr(a, b - a);
}

TEST_F(DitTrainEmu, PoisonedLatentStopsAndSkipsAsTheCpu) {
  {  // the latent of step 3's first row is NaN (epoch 0's order, seed 9)
    const int64_t bad = train_order(16, 9, 0, 0, 1).indices.at(2 * 4);
    auto shard = load_safetensors(data() + "/shard_000.safetensors");
    Tensor& lat = shard.at("latents");
    for (int64_t i = bad * 256; i < (bad + 1) * 256; ++i) lat.f32()[i] = NAN;
    save_safetensors(data() + "/shard_000.safetensors",
                     std::vector<std::pair<std::string, Tensor>>(shard.begin(), shard.end()));
  }
  // Reads after steps 4 and 5 (log.every_steps 4, the end at 5).
  // One block keeps the four emulated runs short.
  const std::vector<std::string> common{"precision=fp32", "log.every_steps=4", "train.max_steps=5", "model.depth=1"};
  auto with = [&](std::vector<std::string> o) {
    o.insert(o.end(), common.begin(), common.end());
    return o;
  };
  // max_nonfinite 0: both stop at step 3, the GPU at its read after step 4.
  std::string msg[2];
  std::vector<float> weights[2], ema[2];
  for (int d = 0; d < 2; ++d) {
    DitTrainer t(cfg(d == 0 ? "stop_cpu" : "stop_gpu", "siamese", with({d == 0 ? "device=cpu" : "device=cuda"})));
    try {
      t.train();
    } catch (const NonFiniteLoss& e) {
      msg[d] = e.what();
    }
    weights[d] = t.store().weights().to(Device::cpu()).to_vector();
    ema[d] = t.ema().to(Device::cpu()).to_vector();
  }
  ASSERT_NE(msg[0].find("at step 3 (epoch 0); stopping after 1 consecutive"), std::string::npos) << msg[0];
  EXPECT_EQ(stop_step(msg[1]), stop_step(msg[0])) << msg[1];
  ASSERT_EQ(weights[1].size(), weights[0].size());
  for (size_t i = 0; i < weights[0].size(); ++i) {  // the weights after step 2 (no update after it)
    ASSERT_NEAR(weights[1][i], weights[0][i], 1e-5) << "weight " << i;
    ASSERT_NEAR(ema[1][i], ema[0][i], 1e-5) << "ema " << i;
  }
  // max_nonfinite 1: step 3 is skipped alike, 4 and 5 applied.
  const auto cpu = train("skip_cpu", "siamese", with({"device=cpu", "train.max_nonfinite=1"}));
  const auto gpu = train("skip_gpu", "siamese", with({"device=cuda", "train.max_nonfinite=1"}));
  ASSERT_EQ(cpu.size(), 5u);
  ASSERT_EQ(gpu.size(), 5u);
  for (size_t i = 0; i < cpu.size(); ++i) {
    ASSERT_EQ(std::isfinite(gpu[i]), i != 2) << "step " << i + 1;
    ASSERT_EQ(std::isfinite(cpu[i]), i != 2) << "step " << i + 1;
    if (i != 2) EXPECT_NEAR(gpu[i], cpu[i], 1e-5 * std::fabs(cpu[i])) << "step " << i + 1;
  }
  for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"})
    EXPECT_LE(vt_test::max_abs_diff(file("skip_gpu", 5, f), file("skip_cpu", 5, f)), 1e-5) << f;
  // The same step recorded as non-finite in metrics.jsonl.
  auto nonfinite_steps = [&](const std::string& run) {
    std::vector<int64_t> steps;
    std::ifstream in(out(run) + "/t/metrics.jsonl");
    for (std::string line; std::getline(in, line);)
      if (line.find("\"nonfinite\"") != std::string::npos) steps.push_back(std::stoll(line.substr(8)));
    return steps;
  };
  EXPECT_EQ(nonfinite_steps("skip_cpu"), std::vector<int64_t>{3});
  EXPECT_EQ(nonfinite_steps("skip_gpu"), std::vector<int64_t>{3});
}

TEST_F(DitTrainEmu, DdimSamplingMatchesCpu) {
  train("cpu", "siamese", {"device=cpu"});
  SampleOptions so;
  so.sampler = "ddim", so.steps = 5, so.eta = 0.5, so.cfg_scale = 3.0, so.seed = 21, so.batch = 3;
  const std::vector<int32_t> labels{0, 2, 1, 1};
  const auto ema = load_safetensors(file("cpu", 10, "ema.safetensors"));
  const DitTrainConfig c = cfg("cpu", "siamese", {});
  DiT on_cpu(c.model), on_gpu(c.model);
  on_cpu.load(ema);
  on_gpu.load(ema);
  on_gpu.to(Device::cuda(0));
  const Tensor want = sample_images(on_cpu, so, labels), got = sample_images(on_gpu, so, labels);
  ASSERT_TRUE(got.device().is_cpu());
  const std::vector<float> w = want.to_vector(), g = got.to_vector();
  double scale = 0, worst = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::fabs(w[i])));
    worst = std::max(worst, static_cast<double>(std::fabs(g[i] - w[i])));
  }
  EXPECT_GT(scale, 0.1);
  EXPECT_LE(worst, 1e-5 * scale) << "largest sample difference " << worst << " (scale " << scale << ")";
}

// CUDA Graph steps (train.cuda_graph: auto, train/step_graph.h) against
// eager steps (off) on emulated CUDA: label dropout, timesteps and the noise
// (a kernel keyed by the step) are drawn before each launch, and the graph
// replays q_sample, forward, loss, backward and the update. 10 steps in one
// TrainLoop run: step 1 eager, 9 launches; losses and the checkpoint's
// tensors are the eager run's bit for bit (a noise or timestep baked into the
// graph would repeat step 2's and show).
TEST_F(DitTrainEmu, CudaGraphStepsMatchEagerStepsBitForBit) {
  const auto eager = train("eager", "siamese", {"device=cuda", "precision=fp32", "train.cuda_graph=off"});
  const size_t before = vt_emu_graph_launches();
  const auto graph = train("graph", "siamese", {"device=cuda", "precision=fp32", "train.cuda_graph=auto"});
  EXPECT_EQ(vt_emu_graph_launches() - before, 9u);
  ASSERT_EQ(eager.size(), 10u);
  EXPECT_EQ(graph, eager);
  for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(vt_test::max_abs_diff(file("graph", 10, f), file("eager", 10, f)), 0.0) << f;
}

}  // namespace
}  // namespace vt
