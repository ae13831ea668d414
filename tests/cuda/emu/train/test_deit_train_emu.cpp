// vtrain's whole step on emulated CUDA (tests/cuda/emu) against the same
// trainer on the CPU: a tiny DeiT (SiameseNorm and Pre-Norm) with Mixup/
// CutMix, drop path, EMA and gradient clipping on, 10 steps. The CPU run is
// the oracle: fp32 losses within 1e-5 relative at every step and every
// parameter, EMA weight and AdamW moment within 1e-5 after 10 steps; bf16
// (GEMMs and activations, attention on bf16 q/k/v in every step) keeps the
// losses within 2e-2 relative. A CPU checkpoint resumed on
// the GPU continues with the CPU's losses, and steps after the first make no
// cudaMalloc (the workspaces are planned once, the caching allocator serves
// the rest), and the host reads the step records once per log interval.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/config.h"
#include "../emu_trace.h"
#include "train_emu_util.h"
#include "vision/trainer.h"
#include "vision_test_util.h"

namespace vt {
namespace {

// 4 classes x 8 CIFAR-10 train images at 16x16 (patch 8: 4 patches + the
// class token), batch 4: 8 steps an epoch; 10 steps run into the second
// epoch (Mixup keys of two epochs, a mid-epoch stop). Sizes are the
// emulator's: every CUDA thread of every block is a host fiber.
std::string tiny_yaml(const std::string& root, const std::string& out, const std::string& scheme) {
  return "name: t\nout_dir: " + out + "\nseed: 7\nthreads: 1\n" +
         "model: {preset: custom, img_size: 16, patch_size: 8, dim: 16, depth: 2, heads: 2, drop_path: 0.2, "
         "norm: {scheme: " + scheme + "}}\n"
         "data: {root: " + root + ", val_split: test, workers: 1, repeated_aug: 1}\n"
         "train: {epochs: 2, max_steps: 10, batch_size: 4, lr: 2.0e-3, warmup_epochs: 1, clip_grad: 0.5, "
         "ema_decay: 0.9}\n"
         "eval: {batch_size: 4, every_epochs: 0, max_images: 4}\n"
         "ckpt: {every_epochs: 0}\n"
         "log: {every_steps: 5, tensorboard: false}\n";
}

class DeitTrainEmu : public ::testing::Test {
 protected:
  void SetUp() override { vt_test::make_cifar_subset(data(), 4, 8, 2); }
  std::string data() const { return tmp_.path() + "/data"; }
  std::string out(const std::string& n) const { return tmp_.path() + "/" + n; }
  Config cfg(const std::string& run, const std::string& scheme, const std::vector<std::string>& ov) const {
    return Config::parse(tiny_yaml(data(), out(run), scheme), vtrain_schema(), ov, "test.yaml", ".");
  }
  std::vector<double> train(const std::string& run, const std::string& scheme, const std::vector<std::string>& ov,
                            TrainSummary* sum = nullptr) const {
    Trainer t(cfg(run, scheme, ov), "test.yaml");
    const TrainSummary s = t.run();
    if (sum) *sum = s;
    return t.losses();
  }
  std::string file(const std::string& run, int step, const std::string& f) const {
    return out(run) + "/t/step_" + std::to_string(step) + "/" + f;
  }
  // `ov` with key=host, and with key=device stopped at step 3 then resumed,
  // eagerly and with CUDA Graph steps: the same 10 losses and the same
  // model, EMA and optimizer files, bit for bit.
  void expect_device_path_matches_host(const std::vector<std::string>& ov, const std::string& key) const {
    for (const char* graph : {"off", "auto"}) {
      auto with = [&](const char* on) {
        std::vector<std::string> o{"device=cuda", "precision=fp32", std::string("train.cuda_graph=") + graph};
        o.insert(o.end(), ov.begin(), ov.end());
        o.push_back(key + "=" + on);
        return o;
      };
      const std::string h = std::string("host_") + graph, d = std::string("dev_") + graph;
      const auto host = train(h, "siamese", with("host"));
      std::vector<std::string> first = with("device");
      first.push_back("train.max_steps=3");
      auto dev = train(d, "siamese", first);
      for (double l : train(d, "siamese", with("device"))) dev.push_back(l);
      ASSERT_EQ(host.size(), 10u) << graph;
      EXPECT_EQ(dev, host) << graph;
      for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"})
        EXPECT_EQ(vt_test::max_abs_diff(file(d, 10, f), file(h, 10, f)), 0.0) << graph << " " << f;
    }
  }
  // fp32 on both devices: losses and every saved tensor agree.
  void expect_fp32_agreement(const std::string& scheme) {
    TrainSummary cs, gs;
    const auto cpu = train("cpu", scheme, {"device=cpu"}, &cs);
    const auto gpu = train("gpu", scheme, {"device=cuda", "precision=fp32"}, &gs);
    ASSERT_EQ(cpu.size(), 10u);
    vt_test::expect_losses_close(gpu, cpu, 1e-5, scheme + " fp32");
    // The final evaluation ran on the device too (model and EMA weights).
    EXPECT_NEAR(gs.final_eval.loss, cs.final_eval.loss, 1e-5 * cs.final_eval.loss);
    EXPECT_EQ(gs.final_eval.correct1, cs.final_eval.correct1);
    EXPECT_EQ(gs.final_eval.correct5, cs.final_eval.correct5);
    EXPECT_NEAR(gs.final_eval_ema.loss, cs.final_eval_ema.loss, 1e-5 * cs.final_eval_ema.loss);
    for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"}) {
      std::string worst;
      const double d = vt_test::max_abs_diff(file("gpu", 10, f), file("cpu", 10, f), &worst);
      EXPECT_LE(d, 1e-5) << scheme << " " << f << ": largest difference in " << worst;
    }
  }
  vt_test::TmpDir tmp_;
};

TEST_F(DeitTrainEmu, SiameseFp32MatchesCpu) { expect_fp32_agreement("siamese"); }
TEST_F(DeitTrainEmu, PreNormFp32MatchesCpu) { expect_fp32_agreement("pre"); }

TEST_F(DeitTrainEmu, SiameseBf16LossesWithinTolerance) {
  const auto cpu = train("cpu", "siamese", {"device=cpu"});
  std::vector<double> gpu;
  const AttentionCalls calls = vt_test::attention_calls_during(
      // Eager steps: the counters count host calls, which a CUDA Graph replay does not make.
      [&] { gpu = train("gpu", "siamese", {"device=cuda", "precision=bf16", "train.cuda_graph=off"}); });
  vt_test::expect_losses_close(gpu, cpu, 2e-2, "siamese bf16");
  // bf16 GEMMs really ran: the losses are not the fp32 ones bit for bit.
  EXPECT_NE(gpu, cpu);
  // And bf16 activations: attention got bf16 q/k/v in every step and the
  // final evaluations (model and EMA).
  vt_test::expect_bf16_attention(calls, 10 * 2);  // 10 steps x depth 2
}

TEST_F(DeitTrainEmu, CpuCheckpointResumesOnGpu) {
  const auto full = train("cpu", "siamese", {"device=cpu"});
  const auto first = train("moved", "siamese", {"device=cpu", "train.max_steps=5"});
  ASSERT_EQ(first.size(), 5u);
  const auto rest = train("moved", "siamese", {"device=cuda", "precision=fp32"});  // resumes step 5's checkpoint
  vt_test::expect_losses_close(rest, std::vector<double>(full.begin() + 5, full.end()), 1e-5, "resumed on cuda", 6);
  EXPECT_LE(vt_test::max_abs_diff(file("moved", 10, "model.safetensors"), file("cpu", 10, "model.safetensors")), 1e-5);
  // And back: the GPU checkpoint (fp32 safetensors, the CPU's names) loads on the CPU.
  TrainSummary s;
  train("moved", "siamese", {"device=cpu", "train.max_steps=11"}, &s);
  EXPECT_EQ(s.steps, 11);
}

TEST_F(DeitTrainEmu, NoCudaMallocAfterTheFirstStep) {
  // Two fresh runs from an empty cache: the 3-step run calls cudaMalloc
  // exactly as often as the 1-step run (the evaluation and checkpoint at the
  // end are the same in both), so steps 2 and 3 allocate nothing new.
  // Eager steps (a CUDA Graph capture fills its own pool once:
  // CudaGraphCaptureAllocatesOnce).
  cuda_empty_cache();
  size_t before = vt_emu_malloc_count();
  train("one", "siamese", {"device=cuda", "precision=fp32", "train.max_steps=1", "train.cuda_graph=off"});
  const size_t one = vt_emu_malloc_count() - before;
  cuda_empty_cache();
  before = vt_emu_malloc_count();
  TrainSummary s;
  train("three", "siamese", {"device=cuda", "precision=fp32", "train.max_steps=3", "train.cuda_graph=off"}, &s);
  const size_t three = vt_emu_malloc_count() - before;
  EXPECT_EQ(s.steps, 3);
  EXPECT_GT(one, 0u);
  EXPECT_EQ(three, one) << "cudaMalloc calls: 1 step " << one << ", 3 steps " << three;
  EXPECT_GT(cuda_peak_bytes_in_use(), 0u);
}

TEST_F(DeitTrainEmu, OneDeviceReadPerLogInterval) {
  // log.every_steps 2: a 4-step run reads the step records after steps 2
  // and 4, a 2-step run after step 2; the evaluation and checkpoint at the
  // end are the same in both, so 2 more steps cost exactly 1 more
  // device->host copy (the loss and the gradient norm no longer cross per
  // step). Every step's loss still arrives: SiameseFp32MatchesCpu.
  auto d2h = [&](const std::string& run, const char* steps) {
    const size_t before = vt_emu_d2h_count();
    const auto losses = train(run, "siamese", {"device=cuda", "precision=fp32", "log.every_steps=2", steps});
    EXPECT_EQ(losses.size(), static_cast<size_t>(std::stoi(std::string(steps).substr(16)))) << run;
    return vt_emu_d2h_count() - before;
  };
  const size_t two = d2h("two", "train.max_steps=2"), four = d2h("four", "train.max_steps=4");
  EXPECT_EQ(four - two, 1u) << "device->host copies: 2 steps " << two << ", 4 steps " << four;
}

// CUDA Graph steps (train.cuda_graph: auto, train/step_graph.h) against
// eager steps (off), both on emulated CUDA: Mixup/CutMix (eager kernels with
// the host's draws before each launch), drop path (masks keyed by the step
// number the replay reads from the device), a warm-up learning rate that
// changes every step, clipping and EMA, 10 steps over two epochs (two
// TrainLoop runs with an evaluation between). Each epoch's first step runs
// eagerly, the others launch the captured graph (7 + 1), and the losses, the
// checkpoint's tensors and the final evaluation are the eager run's bit for
// bit: the emulator replays the same kernels with the same arguments, so any
// value a replay took from the capturing step instead of its own (a mask, a
// rate) would show. SiameseNorm in fp32, Pre-Norm in bf16 (its own
// kernels and the bf16 weight copy), and SiameseNorm with activation
// checkpointing (the backward recomputes each block's forward, drop-path
// masks included, inside the captured step).
TEST_F(DeitTrainEmu, CudaGraphStepsMatchEagerStepsBitForBit) {
  struct Case {
    std::string scheme, prec, ckpt;
  };
  for (const Case& c : {Case{"siamese", "fp32", "none"}, Case{"pre", "bf16", "none"}, Case{"siamese", "fp32", "blocks"}}) {
    const std::string scheme = c.scheme, prec = c.prec;
    auto ov = [&](const std::string& g) {
      return std::vector<std::string>{"device=cuda", "precision=" + prec, "train.cuda_graph=" + g,
                                      "train.activation_checkpointing=" + c.ckpt};
    };
    const std::string e = "eager_" + scheme + prec + c.ckpt, g = "graph_" + scheme + prec + c.ckpt;
    const std::string what = scheme + " " + prec + " " + c.ckpt;
    TrainSummary es, gs;
    const auto eager = train(e, scheme, ov("off"), &es);
    const size_t before = vt_emu_graph_launches();
    const auto graph = train(g, scheme, ov("auto"), &gs);
    EXPECT_EQ(vt_emu_graph_launches() - before, 8u) << what;
    ASSERT_EQ(eager.size(), 10u) << what;
    EXPECT_EQ(graph, eager) << what;
    EXPECT_EQ(gs.final_eval.loss, es.final_eval.loss) << what;
    EXPECT_EQ(gs.final_eval_ema.loss, es.final_eval_ema.loss) << what;
    for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"})
      EXPECT_EQ(vt_test::max_abs_diff(file(g, 10, f), file(e, 10, f)), 0.0) << what << " " << f;
  }
}

// The capture fills the graph's private memory pool once (step 2); the
// replays allocate nothing: 3 and 5 steps call cudaMalloc equally often.
TEST_F(DeitTrainEmu, CudaGraphCaptureAllocatesOnce) {
  auto mallocs = [&](const std::string& run, const std::string& steps) {
    cuda_empty_cache();
    const size_t before = vt_emu_malloc_count();
    train(run, "siamese", {"device=cuda", "precision=fp32", "train.max_steps=" + steps});
    return vt_emu_malloc_count() - before;
  };
  const size_t three = mallocs("three", "3"), five = mallocs("five", "5");
  EXPECT_GT(three, 0u);
  EXPECT_EQ(five, three) << "cudaMalloc calls: 3 steps " << three << ", 5 steps " << five;
}

}  // namespace
}  // namespace vt

namespace vt {
namespace {

// data.augment_on=device on (emulated) CUDA: the loader's uint8 crops and
// plans are uploaded and augmented by kernels/augment.h on the device
// (RandAugment, flip, normalisation, RandomErasing at probability 0.5),
// before Mixup/CutMix. The same 10 steps as the host-augmented GPU run bit
// for bit (losses, model, EMA, optimizer moments), eagerly and with CUDA
// Graph steps (the augmentation runs before the batch is copied into the
// graph's fixed buffers), and a device-augmented run stopped at step 3
// resumes onto the same weights.
TEST_F(DeitTrainEmu, AugmentOnDeviceMatchesHostAugmentationBitForBit) {
  expect_device_path_matches_host({"data.random_erasing=0.5"}, "data.augment_on");
}

}  // namespace
}  // namespace vt

#include <filesystem>
#include <fstream>

#include <opencv2/imgcodecs.hpp>

#include <cuda_runtime_api.h>

#include "../nvjpeg_emu.h"
#include "data_pipeline/shard_pack.h"

namespace vt {
namespace {

// data.decode_on=device on (emulated) CUDA: the loader hands each JPEG's
// bytes and crop box; nvJPEG (the emulator's stand-in: libjpeg-turbo, so
// the host decoder's pixels) decodes the batch, the crops are resized on
// the device and augmented there. Against the same run decoding on the host
// (data.decode: full, data.dct_scaling: false: the device decodes at full
// size): the same 10 steps bit for bit, eagerly and with CUDA Graph steps,
// and across a stop at step 3. The training folder also holds a PNG (a
// host crop), a progressive JPEG (which nvJPEG's hardware backend refuses:
// the host decoder's, uploaded) and a JPEG cut in its data (it passes the
// header read; data.on_corrupt=skip replaces it as the host path does; with
// error, the run stops naming it).
class DecodeOnDeviceEmu : public DeitTrainEmu {
 protected:
  void SetUp() override {
    DeitTrainEmu::SetUp();
    namespace fs = std::filesystem;
    const fs::path train = fs::path(data()) / "train";
    const cv::Mat a = cv::imread((train / "airplane" / "0001.jpg").string());
    std::vector<uint8_t> bytes;
    cv::imencode(".png", a, bytes);
    write(train / "airplane" / "0001.jpg", bytes);
    const cv::Mat b = cv::imread((train / "automobile" / "0002.jpg").string());
    cv::imencode(".jpg", b, bytes, {cv::IMWRITE_JPEG_PROGRESSIVE, 1, cv::IMWRITE_JPEG_QUALITY, 90});
    write(train / "automobile" / "0002.jpg", bytes);
    std::ifstream in(train / "bird" / "0003.jpg", std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
    bytes.resize(bytes.size() * 2 / 3);
    write(train / "bird" / "0003.jpg", bytes);
  }
  static void write(const std::filesystem::path& p, const std::vector<uint8_t>& b) {
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(b.data()),
                                                               static_cast<std::streamsize>(b.size()));
  }
};

TEST_F(DecodeOnDeviceEmu, MatchesHostDecodeBitForBit) {
  vt_emu_nvjpeg_reset_counts();
  expect_device_path_matches_host({"data.random_erasing=0.5", "data.dct_scaling=false", "data.on_corrupt=skip",
                                   "data.augment_on=device"},
                                  "data.decode_on");
  // nvJPEG decoded on the uploader's stream, beside the step, never on the
  // compute stream (the per-thread default stream, or null for it).
  ASSERT_GT(vt_emu_nvjpeg_counts().batched_calls, 0);
  EXPECT_NE(vt_emu_nvjpeg_counts().last_stream, nullptr);
  EXPECT_NE(vt_emu_nvjpeg_counts().last_stream, static_cast<const void*>(cudaStreamPerThread));
}

// The same on packed shards (the PNG and the progressive JPEG stored as
// they are, the cut JPEG left out by the pack): nvJPEG reads each sample's
// bytes straight from the mapping, and the run trains bit for bit as the
// host-decoding one on the same shards.
TEST_F(DecodeOnDeviceEmu, PackedShardsMatchHostDecodeBitForBit) {
  for (const char* split : {"train", "test"}) {
    PackOptions po;
    po.images_dir = data() + "/" + split;
    po.out_dir = out("shards") + "/" + split;
    po.on_corrupt = "skip";
    po.progress = false;
    ASSERT_GT(pack_shards(po).images, 0);
  }
  auto run = [&](const std::string& name, const char* on) {
    const std::vector<std::string> ov{"device=cuda", "precision=fp32", "data.format=shards", "data.dct_scaling=false",
                                      "data.root=" + out("shards"), std::string("data.decode_on=") + on};
    return train(name, "siamese", ov);
  };
  const auto host = run("sh", "host"), dev = run("sd", "device");
  ASSERT_EQ(host.size(), 10u);
  EXPECT_EQ(dev, host);
  for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(vt_test::max_abs_diff(file("sd", 10, f), file("sh", 10, f)), 0.0) << f;
}

// What data.decode_on=device cannot run with is refused, naming the key.
TEST_F(DecodeOnDeviceEmu, RefusesWhatItCannotRun) {
  for (const char* other : {"data.augment_on=host", "data.decode=crop"}) {
    try {
      Trainer t(cfg("refused", "siamese", {"device=cuda", "data.decode_on=device", other}), "test.yaml");
      FAIL() << other << " was accepted";
    } catch (const std::exception& e) {
      EXPECT_EQ(std::string(e.what()).rfind("data.decode_on (command line)", 0), 0u) << other << ": " << e.what();
    }
  }
}

// What nvJPEG's hardware backend does not take by its markers (the
// progressive JPEG; the cut one, which has no EOI) is decoded by the
// loader's workers, not by the decoder's host fallback on the training
// thread: one epoch (each of the 32 files once; the cut one skipped, its
// place taken by the next file, bird/0004.jpg) logs 30 images by nvJPEG,
// none by the host decoder, and 2 host crops (the PNG, the progressive JPEG).
TEST_F(DecodeOnDeviceEmu, RefusedJpegsDecodedByTheWorkers) {
  train("w", "siamese", {"device=cuda", "precision=fp32", "data.dct_scaling=false", "data.on_corrupt=skip",
                         "data.augment_on=device", "data.decode_on=device", "train.max_steps=8"});
  std::ifstream in(out("w") + "/t/log.txt");
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(log.find("30 images by nvJPEG (hardware), 0 by the host decoder after nvJPEG refused or failed them "
                     "(0 failed), 2 host crops"),
            std::string::npos)
      << log;
}

TEST_F(DecodeOnDeviceEmu, UndecodableFileStopsTheRunNamingIt) {
  try {
    train("err", "siamese", {"device=cuda", "data.dct_scaling=false", "data.decode_on=device"});
    FAIL() << "the cut JPEG did not stop the run";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("bird/0003.jpg"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vt

#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace vt {
namespace {

// Files nvJPEG fails in a data.decode_on=device run (the stand-in's
// VT_EMU_NVJPEG_FAIL names them by the FNV-1a 64-bit hash of their bytes,
// computed here from its definition): one per status real nvJPEG returns
// for particular decodable ImageNet files (EXECUTION_FAILED: DALI#3160,
// INVALID_PARAMETER: DALI#3159, INTERNAL_ERROR: nvImageCodec#55).
class NvjpegFailuresEmu : public DeitTrainEmu {
 protected:
  static std::vector<uint8_t> read(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
  }
  std::string rule(const char* status, const std::string& file) const {
    uint64_t h = 14695981039346656037ull;
    for (uint8_t c : read(data() + "/train/" + file)) h = (h ^ c) * 1099511628211ull;
    char s[17];
    std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(h));
    return std::string(status) + ":" + s;
  }
  struct Env {  // the stand-in reads its knobs when the run's decoder creates its handle
    Env(const std::string& fail, bool sticky) {
      setenv("VT_EMU_NVJPEG_FAIL", fail.c_str(), 1);
      if (sticky) setenv("VT_EMU_NVJPEG_FAIL_STICKY", "1", 1);
    }
    ~Env() {
      unsetenv("VT_EMU_NVJPEG_FAIL");
      unsetenv("VT_EMU_NVJPEG_FAIL_STICKY");
    }
  };
  static std::vector<std::string> with(const char* decode_on) {
    // One epoch (32 files, batch 4): every file is drawn exactly once.
    return {"device=cuda", "precision=fp32", "data.dct_scaling=false", "data.augment_on=device",
            "train.max_steps=8", std::string("data.decode_on=") + decode_on};
  }
};

// The three files are decoded on the host: the run trains to its end, bit
// for bit as the host-decoding run, and the epoch's log line counts them.
TEST_F(NvjpegFailuresEmu, FailedFilesDecodedOnTheHostAndCounted) {
  const std::string fail = rule("execution", "airplane/0001.jpg") + "," + rule("invalid", "bird/0005.jpg") + "," +
                           rule("internal", "cat/0007.jpg");
  Env env(fail, false);
  const auto host = train("h", "siamese", with("host"));
  const auto dev = train("d", "siamese", with("device"));
  ASSERT_EQ(host.size(), 8u);
  EXPECT_EQ(dev, host);
  for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"})
    EXPECT_EQ(vt_test::max_abs_diff(file("d", 8, f), file("h", 8, f)), 0.0) << f;
  std::ifstream in(out("d") + "/t/log.txt");
  const std::string log((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(log.find("29 images by nvJPEG (hardware), 3 by the host decoder after nvJPEG refused or failed them "
                     "(3 failed), 0 host crops"),
            std::string::npos)
      << log;
  for (const char* f : {"airplane/0001.jpg", "bird/0005.jpg", "cat/0007.jpg"})
    EXPECT_NE(log.find(std::string(f) + "; nvJPEG still decodes a known-good JPEG"), std::string::npos) << f;
}

// A lost device (VT_EMU_NVJPEG_FAIL_STICKY: from the failure on, nvJPEG
// fails everything, a known-good JPEG too) still stops the run, saying so.
TEST_F(NvjpegFailuresEmu, LostDeviceStopsTheRunSayingSo) {
  Env env(rule("execution", "automobile/0003.jpg"), true);
  try {
    train("lost", "siamese", with("device"));
    FAIL() << "a lost device did not stop the run";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("NVJPEG_STATUS_EXECUTION_FAILED"), std::string::npos) << m;
    EXPECT_NE(m.find("known-good 64x48 baseline JPEG too"), std::string::npos) << m;
    EXPECT_NE(m.find("automobile/0003.jpg"), std::string::npos) << m;
  }
}

}  // namespace
}  // namespace vt
