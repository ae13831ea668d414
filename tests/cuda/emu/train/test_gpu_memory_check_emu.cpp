// The GPU memory check before step 1 (train/memory_estimate.h) on emulated
// CUDA, whose cudaMemGetInfo reports VT_EMU_MEMORY_BYTES less the bytes live:
//  - the saved-activation closed form against Backbone::saved_activation_bytes()
//    counted on the device, every scheme, DeiT and DiT, fp32 and bf16
//    activations, `none` and `blocks`: never above it, and equal for
//    SiameseNorm;
//  - vtrain and dittrain on a device too small for their parameters and
//    optimizer state alone: refused with an error naming the need, the free
//    memory and the keys that lower it, before any cudaMalloc;
//  - an allocation past the device's memory fails naming the size and the
//    tensor's shape, dtype and device;
//  - a configuration that fits passes the check, and the step's counted peak
//    (the caching allocator's bytes in use) is at least the estimate: the
//    estimate is a lower bound, so the check never refuses a config that fits.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <filesystem>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "core/allocator.h"
#include "core/config.h"
#include "core/out_of_memory.h"
#include "data_pipeline/dataset.h"
#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "diffusion/dit_train_config.h"
#include "diffusion/dit_trainer.h"
#include "train/memory_estimate.h"
#include "train_emu_util.h"
#include "vision/evaluate.h"
#include "vision/trainer.h"
#include "vision/vit.h"
#include "vision_test_util.h"

namespace vt {
namespace {

// The emulated device's memory for one scope (VT_EMU_MEMORY_BYTES).
struct DeviceMemory {
  explicit DeviceMemory(size_t bytes) { setenv("VT_EMU_MEMORY_BYTES", std::to_string(bytes).c_str(), 1); }
  ~DeviceMemory() { unsetenv("VT_EMU_MEMORY_BYTES"); }
};

// Takes, for one scope, every free piece the caching allocator keeps in
// segments still partly in use (cuda_empty_cache gives back only whole free
// segments, and best fit serves later requests from those pieces:
// core/allocator.h), for requests on the compute stream and the per-thread
// stream the kernels' workspaces use: on a device left without room for a
// new segment, the next allocation then fails. Stops at the first request
// that got a new segment instead (the device still had room).
class HoldCachedPieces {
 public:
  HoldCachedPieces() {
    for (CudaStreamHandle s : {CudaStreamHandle(nullptr), CudaStreamHandle(cudaStreamPerThread)})
      for (size_t bytes : {size_t(512), (size_t(1) << 20) + 512}) {  // the smallest small and large requests
        try {
          for (;;) {
            const size_t mallocs = cuda_malloc_calls();
            held_.push_back(cuda_alloc(bytes, 0, s));
            if (cuda_malloc_calls() != mallocs) break;
          }
        } catch (const std::bad_alloc&) {
        }
      }
  }
  ~HoldCachedPieces() {
    for (void* p : held_) cuda_free(p, 0);
  }
  HoldCachedPieces(const HoldCachedPieces&) = delete;
  HoldCachedPieces& operator=(const HoldCachedPieces&) = delete;

 private:
  std::vector<void*> held_;
};

int64_t counted_saved_bytes(const BackboneConfig& cfg, int64_t B, int64_t T, bool bf16, ActivationCheckpointing m) {
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  Philox rng(5, 0);
  float* w = store.weights().f32();
  for (int64_t i = 0; i < store.numel(); ++i) w[i] = static_cast<float>(0.3 * rng.normal());
  const Device dev = Device::cuda(0);
  store.to(dev);
  if (bf16) store.enable_bf16_copy();
  bb.set_activation_checkpointing(m);
  const int64_t D = cfg.dim;
  Tensor h = Tensor::empty({B, T, D});
  for (int64_t i = 0; i < h.numel(); ++i) h.f32()[i] = static_cast<float>(rng.normal());
  const Tensor c = cfg.conditioned() ? Tensor::zeros({B, D}, DType::F32, dev) : Tensor();
  const Tensor out = Tensor::empty({B, T, D}, DType::F32, dev);
  bb.forward(h.to(dev), c, out, /*training=*/true, /*seed=*/3, /*step=*/1);
  return bb.saved_activation_bytes();
}

TEST(GpuMemoryCheckEmu, SavedActivationClosedFormIsALowerBound) {
  const int64_t B = 2, T = 5;
  for (ModelVariant v : {ModelVariant::DeiT, ModelVariant::DiT})
    for (NormScheme s : {NormScheme::Siamese, NormScheme::Pre, NormScheme::Post, NormScheme::MixLN,
                         NormScheme::DeepNorm, NormScheme::ResiDual, NormScheme::Hybrid, NormScheme::SpanNorm})
      for (bool bf16 : {false, true})
        for (ActivationCheckpointing m : {ActivationCheckpointing::None, ActivationCheckpointing::Blocks}) {
          BackboneConfig c;
          c.variant = v, c.scheme = s, c.dim = 16, c.depth = 3, c.heads = 2, c.mixln_alpha = 0.34;
          c.gelu = v == ModelVariant::DiT ? Activation::GeluTanh : Activation::GeluErf;
          if (v == ModelVariant::DeiT) c.drop_path = {0.0f, 0.3f, 0.5f};
          const std::string what = std::string(v == ModelVariant::DiT ? "dit " : "deit ") + norm_scheme_name(s) +
                                   (bf16 ? " bf16 " : " fp32 ") + activation_checkpointing_name(m);
          const int64_t counted = counted_saved_bytes(c, B, T, bf16, m);
          const int64_t bound = saved_activation_lower_bound(c, B, T, bf16, m);
          EXPECT_LE(bound, counted) << what;
          if (s == NormScheme::Siamese) EXPECT_EQ(bound, counted) << what;  // the closed form is exact there
        }
}

// A device allocation past the device's memory (the emulator fails a
// cudaMalloc past VT_EMU_MEMORY_BYTES) names the size and the tensor.
TEST(GpuMemoryCheckEmu, OutOfMemoryNamesTheTensor) {
  cuda_empty_cache();
  {
    DeviceMemory mem(size_t(1) << 20);  // 1 MiB; the tensor is 4 MiB
    try {
      Tensor t = Tensor::empty({1024, 1024}, DType::F32, Device::cuda(0));
      FAIL() << "allocated past the device's memory";
    } catch (const std::bad_alloc& e) {
      const std::string m = e.what();
      for (const char* want : {"CUDA out of memory: asked 4194304 bytes on cuda:0",
                               "for a F32 tensor of shape [1024, 1024] on cuda:0"})
        EXPECT_NE(m.find(want), std::string::npos) << "'" << want << "' missing from: " << m;
    }
  }
  const Tensor t = Tensor::empty({1024, 1024}, DType::F32, Device::cuda(0));  // fits once the device has room
  EXPECT_EQ(t.nbytes(), size_t(4) << 20);
}

// vtrain: 4 classes x 8 CIFAR images at 16x16, patch 8 (5 tokens), batch 4.
class VtrainMemoryEmu : public ::testing::Test {
 protected:
  void SetUp() override { vt_test::make_cifar_subset(tmp_.path() + "/data", 4, 8, 2); }
  Config cfg(const std::vector<std::string>& ov) const {
    const std::string yaml =
        "name: t\nout_dir: " + tmp_.path() + "/out\nseed: 7\nthreads: 1\n" +
        "model: {preset: custom, img_size: 16, patch_size: 8, dim: 16, depth: 2, heads: 2, drop_path: 0.2}\n"
        "data: {root: " + tmp_.path() + "/data, val_split: test, workers: 1, repeated_aug: 1}\n"
        "train: {epochs: 1, max_steps: 2, batch_size: 4, lr: 2.0e-3, warmup_epochs: 0, ema_decay: 0.9}\n"
        "eval: {batch_size: 4, every_epochs: 0, max_images: 4}\nckpt: {every_epochs: 0}\n"
        "log: {every_steps: 1, tensorboard: false}\n";
    return Config::parse(yaml, vtrain_schema(), ov, "test.yaml", ".");
  }
  vt_test::TmpDir tmp_;
};

TEST_F(VtrainMemoryEmu, OversizedConfigRefusedBeforeAnyAllocation) {
  DeviceMemory mem(4096);  // below the parameters' fp32 weights alone
  cuda_empty_cache();       // earlier tests' cached blocks would count as free
  const size_t mallocs = vt_emu_malloc_count();
  try {
    Trainer t(cfg({"device=cuda", "precision=fp32"}), "test.yaml");
    FAIL() << "not refused";
  } catch (const ConfigError& e) {
    FAIL() << "a configuration error (status 2) instead of a runtime one: " << e.what();
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    for (const char* want : {"GPU memory", "4096 bytes) free", "cuda:0", "train.batch_size (4 per process)",
                             "train.activation_checkpointing=blocks", "precision=bf16", "saved activations"})
      EXPECT_NE(m.find(want), std::string::npos) << "'" << want << "' missing from: " << m;
  }
  EXPECT_EQ(vt_emu_malloc_count(), mallocs);
  // The keys already at their lower setting are not offered again.
  try {
    Trainer t(cfg({"device=cuda", "precision=bf16", "train.activation_checkpointing=blocks"}), "test.yaml");
    FAIL() << "not refused";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("train.batch_size"), std::string::npos) << m;
    EXPECT_EQ(m.find("train.activation_checkpointing=blocks"), std::string::npos) << m;
    EXPECT_EQ(m.find("precision=bf16"), std::string::npos) << m;
  }
  EXPECT_EQ(vt_emu_malloc_count(), mallocs);
}

TEST_F(VtrainMemoryEmu, FittingConfigPassesAndItsPeakIsAtLeastTheEstimate) {
  const Config c = cfg({"device=cuda", "precision=fp32", "train.cuda_graph=off"});
  cuda_empty_cache();
  cuda_reset_peak_bytes();
  const size_t before = cuda_bytes_in_use();
  Trainer t(c, "test.yaml");  // passes the check (1 GiB)
  t.run();
  const size_t peak = cuda_peak_bytes_in_use() - before;  // counted by the caching allocator
  const TrainOptions& o = t.options();
  StepMemoryInputs in;
  in.backbone = o.vit.backbone;
  in.params = VisionTransformer(o.vit).params().numel();
  in.batch = 4, in.tokens = (16 / 8) * (16 / 8) + 1, in.ema = true, in.bf16 = false;
  const StepMemoryEstimate e = estimate_step_memory(in);
  EXPECT_GT(e.activation_bytes, 0);
  EXPECT_EQ(e.state_bytes, in.params * 20);  // weights, gradients, two moments, EMA: 4 bytes each
  EXPECT_GE(static_cast<int64_t>(peak), e.total()) << "estimate " << e.total() << " above the step's counted peak";
}

// An out-of-memory after the check (here: evaluation on a device left with
// no room beyond the model) names the evaluation batch and the key that
// lowers it, and the tensor it could not allocate.
TEST_F(VtrainMemoryEmu, EvaluationOutOfMemoryNamesTheBatchAndItsKey) {
  TrainOptions o = train_options(cfg({"device=cuda", "precision=fp32", "eval.batch_size=8"}), "test.yaml");
  auto ds = std::make_shared<ImageFolderDataset>(tmp_.path() + "/data/test", deit_eval_pipeline(o));
  o.vit.num_classes = ds->num_classes();  // the trainer takes it from the data
  VisionTransformer model(o.vit);
  model.to(Device::cuda(0));
  const EvalOptions eo = eval_options(o);
  const EvalResult fits = evaluate_classifier(model, ds, eo);  // with the device's full memory
  EXPECT_GT(fits.images, 0);
  cuda_empty_cache();
  DeviceMemory mem(cuda_bytes_in_use() + 256);  // the model's weights and 256 bytes
  HoldCachedPieces held;
  try {
    evaluate_classifier(model, ds, eo);
    FAIL() << "evaluated on a device without room";
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    for (const char* want : {"evaluation batch (eval.batch_size=8 per process; lower it): ", "CUDA out of memory",
                             "tensor of shape"})
      EXPECT_NE(m.find(want), std::string::npos) << "'" << want << "' missing from: " << m;
  }
}

// dittrain: latents [4, 8, 8], patch 2 (16 tokens), batch 4.
class DittrainMemoryEmu : public ::testing::Test {
 protected:
  void SetUp() override { vt_test::write_tiny_latents(tmp_.path() + "/lat", 16); }
  DitTrainConfig cfg(const std::vector<std::string>& ov) const {
    const std::string yaml = "name: t\nout_dir: " + tmp_.path() + "/out\nseed: 9\nthreads: 1\n" +
                             "model: {input_size: 8, in_channels: 4, patch: 2, hidden: 16, depth: 2, heads: 2, "
                             "num_classes: 3}\n"
                             "data: {kind: latents, root: " + tmp_.path() + "/lat, workers: 1}\n"
                             "train: {batch_size: 4, steps: 2, lr: 2.0e-3}\n"
                             "log: {every_steps: 1, tensorboard: false}\nckpt: {every_steps: 100}\nsample: {every: 0}\n";
    return dit_train_config(Config::parse(yaml, dittrain_schema(), ov, "test.yaml", "."));
  }
  vt_test::TmpDir tmp_;
};

TEST_F(DittrainMemoryEmu, FittingConfigPassesAndItsPeakIsAtLeastTheEstimate) {
  const DitTrainConfig c = cfg({"device=cuda", "precision=fp32", "train.cuda_graph=off"});
  cuda_empty_cache();
  cuda_reset_peak_bytes();
  const size_t before = cuda_bytes_in_use();
  {
    DitTrainer t(c);  // passes the check (1 GiB)
    t.train();
  }
  const size_t peak = cuda_peak_bytes_in_use() - before;
  const DiT model(c.model);
  StepMemoryInputs in;
  in.backbone = model.backbone().config();
  in.params = model.params().numel();
  in.batch = 4, in.tokens = (8 / 2) * (8 / 2), in.ema = true, in.bf16 = false;
  const StepMemoryEstimate e = estimate_step_memory(in);
  EXPECT_EQ(e.state_bytes, in.params * 20);
  EXPECT_GE(static_cast<int64_t>(peak), e.total()) << "estimate " << e.total() << " above the step's counted peak";
}

TEST_F(DittrainMemoryEmu, OversizedConfigRefusedBeforeAnyAllocation) {
  const DitTrainConfig c = cfg({"device=cuda", "precision=fp32"});
  DeviceMemory mem(4096);
  cuda_empty_cache();
  const size_t mallocs = vt_emu_malloc_count();
  try {
    DitTrainer t(c);
    FAIL() << "not refused";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    for (const char* want : {"GPU memory", "4096 bytes) free", "train.batch_size (4 per process)",
                             "train.activation_checkpointing=blocks", "precision=bf16"})
      EXPECT_NE(m.find(want), std::string::npos) << "'" << want << "' missing from: " << m;
  }
  EXPECT_EQ(vt_emu_malloc_count(), mallocs);
}

// The periodic sample grid on a device with no room beyond training's
// state: the error names the grid and sample.batch, and no file is written.
TEST_F(DittrainMemoryEmu, SampleGridOutOfMemoryNamesTheGridAndWritesNothing) {
  const DitTrainConfig c = cfg({"device=cuda", "precision=fp32", "sample.num=4", "sample.batch=2", "sample.steps=2"});
  DitTrainer t(c);
  const std::string grid = tmp_.path() + "/grid.png";
  t.save_sample_grid(grid);  // fits with the device's full memory
  ASSERT_TRUE(std::filesystem::exists(grid));
  std::filesystem::remove(grid);
  cuda_empty_cache();
  DeviceMemory mem(cuda_bytes_in_use() + 256);
  HoldCachedPieces held;
  try {
    t.save_sample_grid(grid);
    FAIL() << "sampled on a device without room";
  } catch (const OutOfMemory& e) {
    const std::string m = e.what();
    for (const char* want : {"sample grid of 4 images (sample.batch=2 per model call", "CUDA out of memory"})
      EXPECT_NE(m.find(want), std::string::npos) << "'" << want << "' missing from: " << m;
  }
  EXPECT_FALSE(std::filesystem::exists(grid));
}

}  // namespace
}  // namespace vt
