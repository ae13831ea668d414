// dittrain's data-parallel step with CUDA gradients, checked without a GPU:
// run by ctest under `mpirun -np 2` and `-np 3` (emu.dp_dit_train_np2/np3,
// the DataParallelDitEmu tests of test_dp_train_emu). Every rank trains the
// tiny DiT of train/test_dit_train_emu.cpp (SiameseNorm, label dropout,
// clipping, EMA) on emulated CUDA, where the gradient all-reduce is
// NcclGradientAllReduce with its NCCL calls served by MPI (nccl_emu.cpp),
// then the same ranks train it on the CPU (MPI_Allreduce). The CPU run is
// the oracle (tests/mpi checks it against one process): every step's loss
// within 1e-5 relative on every rank, and every parameter, EMA weight and
// AdamW moment of the last checkpoint within 1e-5. A rank whose timesteps,
// labels or noise rows were not its global rows' would differ. The GPU run
// reduces its gradients in buckets of 262 values
// (train.allreduce_bucket_mb=0.001), several per step during the backward
// pass.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/dist.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "diffusion/dit_trainer.h"
#include "dp_emu_util.h"
#include "nccl_emu.h"
#include "train_emu_util.h"

namespace vt {
namespace {

// 12 latents [4, 8, 8] (3 classes) in one shard; global batch 6 (3 or 2 per
// rank): 2 steps an epoch, so the 4 steps cross an epoch boundary.
constexpr int kSteps = 4;

DitTrainConfig tiny_config(const std::string& data, const std::string& out, const std::vector<std::string>& ov) {
  const std::string yaml = "name: t\nout_dir: " + out + "\nseed: 9\nthreads: 1\n" +
                           "model: {input_size: 8, in_channels: 4, patch: 2, hidden: 16, depth: 2, heads: 2, "
                           "num_classes: 3, class_dropout: 0.25, norm: {scheme: siamese}}\n"
                           "data: {kind: latents, root: " + data + ", workers: 1}\n"
                           "train: {batch_size: 6, steps: " + std::to_string(kSteps) +
                           ", lr: 2.0e-3, ema_decay: 0.9, clip_grad: 0.5}\n"
                           "log: {every_steps: 2, tensorboard: false}\nckpt: {every_steps: 100}\nsample: {every: 0}\n";
  return dit_train_config(Config::parse(yaml, dittrain_schema(), ov, "test.yaml", "."));
}

TEST(DataParallelDitEmu, CudaRanksMatchCpuRanks) {
  const Dist& d = dist();
  ASSERT_GE(d.world(), 2) << "run under mpirun -np 2 or more";
  const vt_test::SharedDir shared;  // removed by rank 0 once every rank is done
  const std::string& dir = shared.path;
  if (d.is_root()) vt_test::write_tiny_latents(dir + "/lat", 12);
  d.barrier();
  // A rank whose setup throws must not leave the others waiting in a
  // collective: all ranks agree first, as dittrain's main does by ending the job.
  bool setup_failed = false;
  auto train = [&](const std::string& run, const std::vector<std::string>& ov) {
    std::unique_ptr<DitTrainer> t;
    try {
      t = std::make_unique<DitTrainer>(tiny_config(dir + "/lat", dir + "/" + run, ov));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "rank %d: %s\n", d.rank(), e.what());
    }
    int64_t failed = t ? 0 : 1;
    d.allreduce_sum(&failed, 1);
    std::vector<double> l;
    if (failed) {
      setup_failed = true;
      return l;
    }
    t->train();
    for (const auto& sl : t->losses()) l.push_back(sl.second);
    return l;
  };
  const size_t calls_before = vt_emu::nccl_calls().size();
  const std::vector<double> gpu = train("gpu", {"device=cuda", "precision=fp32", "train.allreduce_bucket_mb=0.001"});
  ASSERT_FALSE(setup_failed) << "a rank could not set up the run (its message is above)";
  // The first step reduces the whole buffer, each later one at least the
  // final layer's, the blocks' and the embedders' buckets.
  EXPECT_GE(vt_emu::nccl_calls().size() - calls_before, 1u + (kSteps - 1) * 3u);
  const std::vector<double> cpu = train("cpu", {"device=cpu"});
  ASSERT_EQ(cpu.size(), static_cast<size_t>(kSteps));
  vt_test::expect_losses_close(gpu, cpu, 1e-5, "rank " + std::to_string(d.rank()) + " of " + std::to_string(d.world()));
  if (d.is_root()) {
    const std::string step = "/t/step_" + std::to_string(kSteps) + "/";
    for (const char* f : {"model.safetensors", "ema.safetensors", "optimizer.safetensors"}) {
      std::string worst;
      const double diff = vt_test::max_abs_diff(dir + "/gpu" + step + f, dir + "/cpu" + step + f, &worst);
      EXPECT_LE(diff, 1e-5) << f << ": largest difference in " << worst;
    }
  }
}

}  // namespace
}  // namespace vt
