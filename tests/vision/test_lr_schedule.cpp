// The DeiT cosine schedule against its closed form. (Checkpoint directories
// are tested in tests/core/test_checkpoint_dir.cpp.)
#include <gtest/gtest.h>

#include <cmath>

#include "vision/lr_schedule.h"

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

}  // namespace
}  // namespace vt
