// The trainers' shared scaffold: the non-finite policy (stop at once, or skip
// up to N in a row), the state.json layout (and older layouts still read),
// and the run directory (resume choice, files, metrics, checkpoint
// retention).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "core/checkpoint_dir.h"
#include "core/config.h"
#include "test_fs.h"
#include "train/nonfinite.h"
#include "train/run_dir.h"
#include "train/run_state.h"

namespace vt {
namespace {

namespace fs = std::filesystem;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(NonFiniteGuard, ZeroStopsAtTheFirstNonFiniteStepNamingTheCheckpoint) {
  NonFiniteGuard g(0);
  EXPECT_TRUE(g.check(1, 2.5, 1.0, "", "none"));
  try {
    g.check(2, 1.0, kInf, "epoch 0, batch 1", "/r/step_1");
    FAIL() << "no error";
  } catch (const NonFiniteLoss& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("at step 2 (epoch 0, batch 1)"), std::string::npos) << m;
    EXPECT_NE(m.find("last good checkpoint: /r/step_1"), std::string::npos) << m;
    EXPECT_NE(m.find("train.max_nonfinite = 0"), std::string::npos) << m;
  }
}

TEST(NonFiniteGuard, NSkipsUpToNConsecutiveStepsThenStops) {
  NonFiniteGuard g(2);
  EXPECT_FALSE(g.check(1, kNaN, 1.0, "", ""));
  EXPECT_FALSE(g.check(2, kNaN, kNaN, "", ""));
  EXPECT_TRUE(g.check(3, 1.0, 1.0, "", ""));  // a finite step resets the run of failures
  EXPECT_FALSE(g.check(4, kInf, 1.0, "", ""));
  EXPECT_FALSE(g.check(5, kNaN, 1.0, "", ""));
  EXPECT_EQ(g.skipped_total(), 4);
  EXPECT_THROW(g.check(6, kNaN, 1.0, "", ""), NonFiniteLoss);  // the third in a row
  EXPECT_EQ(g.skipped_total(), 4);
}

TEST(RunState, OneLayoutAndOlderLayoutsStillRead) {
  RunPosition p;
  p.step = 7, p.epoch = 1, p.batch_in_epoch = 3, p.optimizer_steps = 6, p.nonfinite_skipped = 1, p.seed = 9;
  p.config_digest = "0123456789abcdef";
  const nlohmann::json j = run_state_json(p);
  EXPECT_EQ(j.at("optimizer").at("kind"), "adamw");
  EXPECT_EQ(j.at("optimizer").at("step"), 6);
  const RunPosition q = read_run_state(j, "ck");
  EXPECT_EQ(q.step, 7);
  EXPECT_EQ(q.epoch, 1);
  EXPECT_EQ(q.batch_in_epoch, 3);
  EXPECT_EQ(q.optimizer_steps, 6);
  EXPECT_EQ(q.nonfinite_skipped, 1);
  EXPECT_EQ(q.seed, 9u);
  EXPECT_EQ(q.config_digest, p.config_digest);
  // dittrain before the shared layout: "optimizer_steps".
  const nlohmann::json old_dit = {{"step", 5}, {"optimizer_steps", 4}, {"epoch", 0}, {"batch_in_epoch", 5}};
  EXPECT_EQ(read_run_state(old_dit, "ck").optimizer_steps, 4);
  // No optimizer step at all: one update per step.
  const nlohmann::json bare = {{"step", 5}, {"epoch", 0}, {"batch_in_epoch", 5}};
  EXPECT_EQ(read_run_state(bare, "ck").optimizer_steps, 5);
  const std::string m = vt_test::error_of([] { read_run_state({{"step", 3}}, "/r/step_3"); });
  EXPECT_NE(m.find("checkpoint '/r/step_3': state.json"), std::string::npos) << m;
}

TEST(RunDirectory, ChoosesTheResumePointWithoutWritingAndLaysOutTheRun) {
  vt_test::TmpDir tmp;
  {
    RunDirectory fresh(tmp.path(), "r", "auto");
    EXPECT_EQ(fresh.resume_path(), "");
    EXPECT_FALSE(fs::exists(tmp.file("r")));  // nothing written before open()
  }
  ConfigSchema schema;
  schema.optional("name", ConfigType::String, "r", "");
  const Config cfg = Config::parse("", schema);
  std::string first;
  {
    RunDirectory run(tmp.path(), "r", "never");
    run.open(cfg, /*tensorboard=*/true);
    run.write_metrics(1, {{"loss", 0.5}}, {{"split", "train"}}, "train");
    CheckpointData d;
    d.state = {{"step", 1}};
    first = run.save(1, d, /*keep_last=*/2);
    run.save(2, d, 2);
    run.save(3, d, 2);
    EXPECT_EQ(run.last_checkpoint(), tmp.file("r/step_3"));
  }
  for (const char* f : {"config.yaml", "log.txt", "metrics.jsonl"}) EXPECT_TRUE(fs::exists(tmp.file(std::string("r/") + f))) << f;
  EXPECT_FALSE(fs::is_empty(tmp.file("r/tb")));
  std::ifstream m(tmp.file("r/metrics.jsonl"));
  std::string line;
  std::getline(m, line);
  EXPECT_NE(line.find("\"loss\""), std::string::npos) << line;
  const auto cks = list_checkpoints(tmp.file("r"));
  ASSERT_EQ(cks.size(), 2u);  // keep_last 2
  EXPECT_EQ(cks.front().first, 2);
  EXPECT_FALSE(fs::exists(first));
  // auto: the newest; never: refused over checkpoints; a directory: itself.
  EXPECT_EQ(RunDirectory(tmp.path(), "r", "auto").resume_path(), tmp.file("r/step_3"));
  EXPECT_THROW(RunDirectory(tmp.path(), "r", "never"), std::runtime_error);
  EXPECT_EQ(RunDirectory(tmp.path(), "other", tmp.file("r/step_2")).resume_path(), tmp.file("r/step_2"));
}

}  // namespace
}  // namespace vt
