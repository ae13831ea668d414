// vtrain's data-parallel step with CUDA gradients, checked without a GPU:
// run by ctest under `mpirun -np 2` and `-np 3` (emu.dp_train_np2/np3).
// Every rank trains a tiny DeiT (SiameseNorm, drop path keyed by the global
// row, label smoothing, clipping, EMA; and once more with Mixup/CutMix, whose
// pairs span ranks: the global batch is mixed on the host of every rank as on
// CPU ranks, then uploaded) on emulated CUDA, where the gradient all-reduce is
// NcclGradientAllReduce with its NCCL calls served by MPI (nccl_emu.cpp),
// then the same ranks train it on the CPU, where it is MPI_Allreduce. The
// CPU run is the oracle (tests/mpi checks it against one process): every
// step's loss within 1e-5 relative on every rank, and every parameter, EMA
// weight and AdamW moment of the last checkpoint within 1e-5. Once with
// gradient buckets of 262 values (train.allreduce_bucket_mb=0.001: several
// NCCL all-reduces a step, issued during the backward pass), once with the
// default 25 MB (one a step).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/dist.h"
#include "dp_emu_util.h"
#include "nccl_emu.h"
#include "train_emu_util.h"
#include "vision/trainer.h"
#include "vision_test_util.h"

namespace vt {
namespace {

// 4 classes x 9 CIFAR-10 images at 16x16, global batch 6 (2 or 3 per
// rank): 6 steps an epoch, 8 steps run into the second epoch.
std::string tiny_yaml(const std::string& root, const std::string& out) {
  return "name: t\nout_dir: " + out + "\nseed: 11\nthreads: 1\n" +
         "model: {preset: custom, img_size: 16, patch_size: 8, dim: 16, depth: 2, heads: 2, drop_path: 0.2, "
         "norm: {scheme: siamese}}\n"
         "data: {root: " + root + ", val_split: test, workers: 1, repeated_aug: 1, mixup: 0, cutmix: 0}\n"
         "train: {epochs: 2, max_steps: 8, batch_size: 6, lr: 2.0e-3, warmup_epochs: 1, clip_grad: 0.5, "
         "ema_decay: 0.9}\n"
         "eval: {batch_size: 6, every_epochs: 0, max_images: 6}\n"
         "ckpt: {every_epochs: 0}\n"
         "log: {every_steps: 4, tensorboard: false}\n";
}

// Trains the tiny run with `extra` overrides on emulated GPU ranks and on CPU
// ranks and compares them (see the top of the file); *nccl_calls: the
// all-reduces of the GPU run.
void expect_cuda_ranks_match_cpu_ranks(const std::vector<std::string>& extra, size_t* nccl_calls) {
  const Dist& d = dist();
  ASSERT_GE(d.world(), 2) << "run under mpirun -np 2 or more";
  const vt_test::SharedDir shared;  // removed by rank 0 once every rank is done
  const std::string& dir = shared.path;
  if (d.is_root()) vt_test::make_cifar_subset(dir + "/data", 4, 9, 2);
  d.barrier();
  // A rank whose setup throws (a config error: the device choice) must not
  // leave the others waiting in a collective: all ranks agree first, as
  // vtrain's main does by ending the job.
  bool setup_failed = false;
  auto train = [&](const std::string& run, const std::vector<std::string>& ov) {
    std::unique_ptr<Trainer> t;
    try {
      t = std::make_unique<Trainer>(
          Config::parse(tiny_yaml(dir + "/data", dir + "/" + run), vtrain_schema(), ov, "test.yaml", "."), "test.yaml");
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: %s\n", d.rank(), e.what());
    }
    int64_t failed = t ? 0 : 1;
    d.allreduce_sum(&failed, 1);
    if (failed) {
      setup_failed = true;
      return std::vector<double>();
    }
    t->run();
    return t->losses();
  };
  auto with = [&](std::vector<std::string> ov) {
    ov.insert(ov.end(), extra.begin(), extra.end());
    return ov;
  };
  const size_t calls_before = vt_emu::nccl_calls().size();
  const std::vector<double> gpu = train("gpu", with({"device=cuda", "precision=fp32"}));
  *nccl_calls = vt_emu::nccl_calls().size() - calls_before;
  ASSERT_FALSE(setup_failed) << "a rank could not set up the run (its message is above)";
  const std::vector<double> cpu = train("cpu", with({"device=cpu"}));
  ASSERT_EQ(cpu.size(), 8u);
  vt_test::expect_losses_close(gpu, cpu, 1e-5, "rank " + std::to_string(d.rank()) + " of " + std::to_string(d.world()));
  if (d.is_root()) {
    for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"}) {
      std::string worst;
      const double diff = vt_test::max_abs_diff(dir + "/gpu/t/step_8/" + f, dir + "/cpu/t/step_8/" + f, &worst);
      EXPECT_LE(diff, 1e-5) << f << ": largest difference in " << worst;
    }
  }
}

// 8 steps: the first reduces the whole buffer, each later one issues the
// head's, the blocks' and the embeddings' buckets (at least 3).
TEST(DataParallelEmu, CudaRanksMatchCpuRanks) {
  size_t calls = 0;
  expect_cuda_ranks_match_cpu_ranks({"train.allreduce_bucket_mb=0.001"}, &calls);
  EXPECT_GE(calls, 1u + 7u * 3u);
}

// Mixup and CutMix both on (switch probability 0.5): over 8 steps both kinds
// of batch occur, and sample i of the global batch is mixed with B-1-i, which
// sits on another rank.
TEST(DataParallelEmu, MixupCutmixCudaRanksMatchCpuRanks) {
  size_t calls = 0;
  expect_cuda_ranks_match_cpu_ranks({"data.mixup=0.8", "data.cutmix=1.0"}, &calls);
  // 25 MB: one bucket of gradients a step, and one all-reduce of the
  // step's device scalars (loss, correct count) for the deferred read.
  EXPECT_EQ(calls, 8u * 2u);
}

// The NCCL timeout, asynchronous error and hanging abort
// (emu.nccl_timeout_np2, emu.nccl_async_error_np2, emu.nccl_abort_hang_np2,
// run by nccl_timeout_emu.sh, which sets VT_EMU_TIMEOUT_DIR, dist.timeout_s
// through VT_EMU_TIMEOUT_S, puts one rank to sleep with VT_TEST_RANK_SLEEP
// and may inject the error or the hang): the GPU run
// with small buckets must never return, because the watchdog aborts the
// communicator and ends the job; the script checks the exit status, the
// time and the messages.
TEST(NcclTimeoutEmu, StuckBucketAllReduceEndsTheJob) {
  const char* dir = std::getenv("VT_EMU_TIMEOUT_DIR");
  const char* timeout = std::getenv("VT_EMU_TIMEOUT_S");
  if (!dir || !timeout) GTEST_SKIP() << "run by nccl_timeout_emu.sh";
  const Dist& d = dist();
  ASSERT_GE(d.world(), 2) << "run under mpirun -np 2 or more";
  if (d.is_root()) vt_test::make_cifar_subset(std::string(dir) + "/data", 4, 9, 2);
  d.barrier();
  Trainer t(Config::parse(tiny_yaml(std::string(dir) + "/data", std::string(dir) + "/gpu"), vtrain_schema(),
                          {"device=cuda", "precision=fp32", "train.allreduce_bucket_mb=0.001",
                           std::string("dist.timeout_s=") + timeout},
                          "test.yaml", "."),
            "test.yaml");
  t.run();
  ADD_FAILURE() << "rank " << d.rank() << ": the run finished although a rank slept past the watchdog's limit";
}

}  // namespace
}  // namespace vt

int main(int argc, char** argv) { return vt_test::run_tests_on_every_rank(argc, argv); }
