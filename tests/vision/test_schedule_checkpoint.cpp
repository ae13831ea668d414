// The DeiT cosine schedule against its closed form, and checkpoint
// directories (atomic naming, listing, pruning).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "vision/checkpoint.h"
#include "vision/lr_schedule.h"
#include "vision_test_util.h"

namespace vt {
namespace {

TEST(LrSchedule, DeitCosineWithWarmup) {
  LrSchedule s;  // base 5e-4, warmup 5 from 1e-6, 300 epochs, min 1e-5
  EXPECT_DOUBLE_EQ(cosine_lr(s, 0.0), 1e-6);
  EXPECT_NEAR(cosine_lr(s, 2.5), 1e-6 + 0.5 * (5e-4 - 1e-6), 1e-15);
  EXPECT_NEAR(cosine_lr(s, 5.0), 1e-5 + 0.5 * (5e-4 - 1e-5) * (1 + std::cos(M_PI * 5 / 300)), 1e-15);
  EXPECT_NEAR(cosine_lr(s, 150.0), 1e-5 + 0.5 * (5e-4 - 1e-5), 1e-15);
  EXPECT_DOUBLE_EQ(cosine_lr(s, 300.0), 1e-5);
  EXPECT_DOUBLE_EQ(cosine_lr(s, 400.0), 1e-5);
  // Per step: epoch 10, step 250 of 1000 -> t = 10.25.
  EXPECT_DOUBLE_EQ(lr_at(s, 10, 250, 1000), cosine_lr(s, 10.25));
  // Compatibility mode: epoch e at lr(e - 1), epochs 0 and 1 both at warmup_lr.
  s.deit_epoch_steps = true;
  EXPECT_DOUBLE_EQ(lr_at(s, 0, 999, 1000), 1e-6);
  EXPECT_DOUBLE_EQ(lr_at(s, 1, 0, 1000), 1e-6);
  EXPECT_DOUBLE_EQ(lr_at(s, 3, 500, 1000), cosine_lr(s, 2.0));
}

TEST(Checkpoint, SaveListPrune) {
  vt_test::TmpDir tmp;
  const std::string run = tmp.path();
  CheckpointData d;
  d.model["w"] = Tensor::from_vector({1, 2, 3}, {3});
  d.optimizer["exp_avg.w"] = Tensor::zeros({3});
  for (int s : {2, 4, 6, 8}) {
    d.state = {{"step", s}};
    save_checkpoint(run, s, d);
  }
  // A stale temporary directory (crash while writing) is not a checkpoint.
  std::filesystem::create_directories(run + "/.step_10.tmp.1");
  auto all = list_checkpoints(run);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(latest_checkpoint(run).value(), run + "/step_8");
  prune_checkpoints(run, 2, /*keep_step=*/2);
  all = list_checkpoints(run);
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[0].first, 2);
  EXPECT_EQ(all[1].first, 6);
  EXPECT_FALSE(std::filesystem::exists(run + "/.step_10.tmp.1"));
  CheckpointData r = load_checkpoint(run + "/step_6");
  EXPECT_EQ(r.state.at("step").get<int>(), 6);
  EXPECT_EQ(r.model.at("w").to_vector(), (std::vector<float>{1, 2, 3}));
  EXPECT_TRUE(r.ema.empty());
  // Re-saving an existing step replaces it completely.
  d.model["w"] = Tensor::from_vector({4, 5, 6}, {3});
  save_checkpoint(run, 6, d);
  EXPECT_EQ(load_checkpoint(run + "/step_6").model.at("w").to_vector(), (std::vector<float>{4, 5, 6}));
  EXPECT_THROW(load_checkpoint(run + "/step_7"), std::runtime_error);
}

}  // namespace
}  // namespace vt
