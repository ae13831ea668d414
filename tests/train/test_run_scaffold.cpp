// The trainers' shared scaffold: the non-finite policy (stop at once, or skip
// up to N in a row), the state.json layout (and older layouts still read),
// the run directory (resume choice, files, metrics, checkpoint retention,
// one writer)
// and the step loop (hook order, update, cadences).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

#include "core/checkpoint_dir.h"
#include "core/config.h"
#include "test_fs.h"
#include "train/loop.h"
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
    run.open(cfg, /*tensorboard=*/true, 0);
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
  // A directory of this run with later checkpoints: refused, naming them
  // (the newest itself is fine, as is a trailing slash).
  const std::string e = vt_test::error_of([&] { RunDirectory(tmp.path(), "r", tmp.file("r/step_2")); });
  EXPECT_NE(e.find("is step 2 of run directory"), std::string::npos) << e;
  EXPECT_NE(e.find("later checkpoints (step_3)"), std::string::npos) << e;
  EXPECT_NE(vt_test::error_of([&] { RunDirectory(tmp.path(), "r", tmp.file("r/step_2") + "/"); }).find("step_3"),
            std::string::npos);
  EXPECT_EQ(RunDirectory(tmp.path(), "r", tmp.file("r/step_3") + "/").resume_path(), tmp.file("r/step_3") + "/");
  EXPECT_EQ(list_checkpoints(tmp.file("r")).size(), 2u);  // nothing removed
}


// Two processes on one run directory: the second is refused up front with
// the holder's pid and host (they used to write one directory together:
// one run's checkpoints next to the other's config.yaml, two step-50
// lines); the OS drops the lock when the holder dies, even by SIGKILL.
TEST(RunDirectory, ASecondWriterIsRefusedNamingTheHolder) {
  vt_test::TmpDir tmp;
  ConfigSchema schema;
  schema.optional("name", ConfigType::String, "r", "");
  const Config cfg = Config::parse("", schema);
  RunDirectory late(tmp.path(), "r", "auto");  // before the directory exists: locks at open()
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    close(ready[0]);
    std::unique_ptr<RunDirectory> run;  // held until the process is killed
    try {
      run = std::make_unique<RunDirectory>(tmp.path(), "r", "auto");
      run->open(cfg, /*tensorboard=*/false, 0);
      (void)!write(ready[1], "1", 1);
    } catch (...) {
      (void)!write(ready[1], "0", 1);
    }
    while (true) pause();
  }
  close(ready[1]);
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  ASSERT_EQ(c, '1') << "the first run could not open the directory";
  const std::string holder = "in use by another run (pid " + std::to_string(child) + " on ";
  std::string msg = vt_test::error_of([&] { RunDirectory second(tmp.path(), "r", "auto"); });
  EXPECT_NE(msg.find("run directory '" + tmp.file("r") + "' is " + holder), std::string::npos) << msg;
  msg = vt_test::error_of([&] { late.open(cfg, false, 0); });
  EXPECT_NE(msg.find(holder), std::string::npos) << msg;
  EXPECT_FALSE(late.is_open());
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_NO_THROW(late.open(cfg, false, 0));  // released by the OS
  EXPECT_THROW(RunDirectory(tmp.path(), "r", "auto"), std::runtime_error);  // and held by `late` now
}

std::vector<int64_t> metric_steps(const std::string& path) {
  std::vector<int64_t> steps;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) steps.push_back(std::stoll(line.substr(line.find(':') + 1)));
  return steps;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// A run killed after step 5 with its checkpoint at step 3 is resumed: steps
// 4 and 5 are computed again, so their first records go (they were kept
// and plots showed both copies). A changed config keeps the earlier one as
// config.3.yaml and says so in log.txt (the warning went to stderr only
// and config.yaml was overwritten).
TEST(RunDirectory, AResumedRunDropsTheRecordsAfterItsStepAndKeepsTheEarlierConfig) {
  vt_test::TmpDir tmp;
  ConfigSchema schema;
  schema.optional("name", ConfigType::String, "r", "").optional("lr", ConfigType::Float, "0.1", "");
  const Config first = Config::parse("", schema), second = Config::parse("lr: 0.2\n", schema);
  {
    RunDirectory run(tmp.path(), "r", "auto");
    run.open(first, /*tensorboard=*/true, 0);
    CheckpointData d;
    d.state = {{"step", 3}};
    for (int64_t s = 1; s <= 5; ++s) {
      run.write_metrics(s, {{"loss", 1.0 / static_cast<double>(s)}}, {}, "train");
      if (s == 3) run.save(3, d, 0);
    }
  }
  {
    RunDirectory run(tmp.path(), "r", "auto");
    ASSERT_EQ(run.resume_path(), tmp.file("r/step_3"));
    run.warn("resuming from a checkpoint written with a different config");
    run.open(second, /*tensorboard=*/true, 3);
    EXPECT_EQ(metric_steps(tmp.file("r/metrics.jsonl")), (std::vector<int64_t>{1, 2, 3}));
    run.write_metrics(4, {{"loss", 0.3}}, {}, "train");
  }
  EXPECT_EQ(metric_steps(tmp.file("r/metrics.jsonl")), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(text_of(tmp.file("r/config.3.yaml")), first.to_yaml());
  EXPECT_EQ(text_of(tmp.file("r/config.yaml")), second.to_yaml());
  const std::string log = text_of(tmp.file("r/log.txt"));
  EXPECT_NE(log.find("[warning] resuming from a checkpoint written with a different config"), std::string::npos) << log;
  EXPECT_NE(log.find("that one is kept as config.3.yaml"), std::string::npos) << log;
  EXPECT_NE(log.find("dropped 2 records after step 3"), std::string::npos) << log;
  // The same config again: nothing is renamed; a second resume from step 3
  // with another config does not overwrite config.3.yaml.
  {
    RunDirectory run(tmp.path(), "r", "auto");
    run.open(second, false, 3);
  }
  EXPECT_FALSE(fs::exists(tmp.file("r/config.3.1.yaml")));
  {
    RunDirectory run(tmp.path(), "r", "auto");
    run.open(first, false, 3);
  }
  EXPECT_EQ(text_of(tmp.file("r/config.3.1.yaml")), second.to_yaml());
  EXPECT_EQ(text_of(tmp.file("r/config.3.yaml")), first.to_yaml());
}

// A resume checkpoint of another model says what it holds and which
// config.yaml built it, instead of hundreds of tensor names alone.
TEST(RunDirectory, ResumeMismatchHintNamesTheKindAndTheRunConfig) {
  vt_test::TmpDir tmp;
  fs::create_directories(tmp.file("r/step_4"));
  Tensor w = Tensor::empty({1});
  w.fill(0.0f);
  const std::map<std::string, Tensor> dit{{"x_embedder.proj.weight", w}}, vit{{"patch_embed.proj.weight", w}};
  EXPECT_EQ(resume_mismatch_hint(tmp.file("r/step_4"), vit, WeightsKind::VitClassifier), "");
  EXPECT_EQ(resume_mismatch_hint(tmp.file("r/step_4"), dit, WeightsKind::VitClassifier),
            "; it holds a dittrain DiT model (for dittrain sample, not veval top1)");
  std::ofstream(tmp.file("r/config.yaml")) << "model: {}\n";
  EXPECT_EQ(resume_mismatch_hint(tmp.file("r/step_4/"), vit, WeightsKind::VitClassifier),
            "; it was written by the run configured by " + tmp.file("r/config.yaml") + ": its model.* keys build it");
}

// A scripted StepTask on a one-parameter store: records the order of the
// hook calls so the loop's cadences can be read off.
struct ScriptedTask : StepTask {
  ParamStore& ps;
  std::vector<double> losses;  // loss of step s is losses[s - 1]
  std::vector<std::string> calls;
  ScriptedTask(ParamStore& p, std::vector<double> l) : ps(p), losses(std::move(l)) {}
  Output forward_backward(int64_t s) override {
    calls.push_back("fb" + std::to_string(s));
    ps.zero_grad();
    ps.grads().f32()[0] = 0.5f;
    Output out;
    out.loss = losses[static_cast<size_t>(s - 1)], out.lr = 0.1, out.where = "batch " + std::to_string(s);
    return out;
  }
  void after_update(int64_t s, const Output&, const UpdateResult& u) override {
    calls.push_back(std::string(u.applied ? "up" : "skip") + std::to_string(s));
  }
  std::vector<std::pair<std::string, double>> log_scalars(int64_t s) override {
    calls.push_back("log" + std::to_string(s));
    return {{"loss", losses[static_cast<size_t>(s - 1)]}};
  }
  void after_step(int64_t s) override { calls.push_back("after" + std::to_string(s)); }
  void save(const std::string& why) override { calls.push_back("save:" + why); }
};

TEST(TrainLoop, RunsTheHooksWithTheUpdateAndTheCadencesInOrder) {
  vt_test::TmpDir tmp;
  ParamStore ps;
  ps.add("w", {1}, ParamInit::ones(), true);
  ps.finalize();
  ps.init(0);
  OptimizerState opt(ps, /*with_ema=*/true);
  NonFiniteGuard guard(1);
  RunDirectory run(tmp.path(), "r", "never");
  ConfigSchema schema;
  schema.optional("name", ConfigType::String, "r", "");
  run.open(Config::parse("", schema), false, 0);
  LoopOptions lo;
  lo.log_every_steps = 2, lo.ckpt_every_steps = 3, lo.log_at_end = true, lo.ckpt_at_end = true;
  lo.update.ema_decay = 0.5f;
  TrainLoop loop(ps, opt, guard, run, lo);
  ScriptedTask task(ps, {1.0, kNaN, 1.0, 1.0, 1.0});
  EXPECT_EQ(loop.run(task, 0, 5), 5);
  const std::vector<std::string> want{"fb1", "up1", "after1",
                                      "fb2", "skip2", "log2", "after2",
                                      "fb3", "up3", "after3", "save:every 3 steps",
                                      "fb4", "up4", "log4", "after4",
                                      "fb5", "up5", "log5", "after5", "save:end"};
  EXPECT_EQ(task.calls, want);
  EXPECT_EQ(opt.steps(), 4);  // step 2 was skipped
  EXPECT_EQ(guard.skipped_total(), 1);
  // Two non-finite steps in a row exceed train.max_nonfinite = 1.
  ScriptedTask bad(ps, {1.0, 1.0, 1.0, 1.0, 1.0, kNaN, kNaN});
  EXPECT_THROW(loop.run(bad, 5, 7), NonFiniteLoss);
}
}  // namespace
}  // namespace vt
