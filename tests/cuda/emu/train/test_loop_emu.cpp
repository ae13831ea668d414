// TrainLoop's deferred reads on emulated CUDA against the same loop on the
// CPU: a scripted task (fixed per-step gradients and losses, some
// non-finite) on a small ParamStore with AdamW, weight-decay mask,
// clipping and EMA. On the device the loss, the gradient norm and the
// non-finite policy stay on the device and the host reads the step records
// once per log interval, yet a stop names the step that triggered it and
// leaves the parameters as after the step before, skips leave exactly the
// CPU's parameters and metrics records, and every step's loss arrives.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/config.h"
#include "test_fs.h"
#include "train_emu_util.h"
#include "train/loop.h"
#include "train/run_dir.h"

namespace vt {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Step s's gradients: a fixed pattern scaled by 1/s (the early steps are
// clipped at clip_grad 1), NaN everywhere on the steps in nan_grads.
struct ScriptTask : StepTask {
  ParamStore& ps;
  std::vector<double> losses;       // loss of step s: losses[s - 1]
  std::vector<int64_t> nan_grads;   // steps whose gradients are NaN
  Tensor scalars;                   // device runs: F32 [1]
  struct Seen {
    int64_t step;
    double loss, grad_norm;
    bool applied;
  };
  std::vector<Seen> seen;
  ScriptTask(ParamStore& p, std::vector<double> l, std::vector<int64_t> ng = {})
      : ps(p), losses(std::move(l)), nan_grads(std::move(ng)) {
    if (!ps.device().is_cpu()) scalars = Tensor::zeros({1}, DType::F32, ps.device());
  }
  Output forward_backward(int64_t s) override {
    const int64_t n = ps.numel();
    Tensor g = Tensor::empty({n});
    const bool bad = std::find(nan_grads.begin(), nan_grads.end(), s) != nan_grads.end();
    for (int64_t i = 0; i < n; ++i)
      g.f32()[i] = bad ? NAN : static_cast<float>(std::sin(0.37 * static_cast<double>(i) + 0.5 * s) / s);
    Tensor grads = ps.grads();
    grads.copy_from(g);  // host -> device on CUDA: no read
    Output out;
    out.loss = losses.at(static_cast<size_t>(s - 1));
    out.lr = 1e-2 / static_cast<double>(s);
    out.where = "batch " + std::to_string(s);
    if (scalars.defined()) {
      scalars.copy_from(Tensor::from_vector({static_cast<float>(out.loss)}, {1}));
      out.scalars = scalars;
      out.loss = kNaN;  // only the read may fill it
    }
    return out;
  }
  void after_update(int64_t s, const Output& out, const UpdateResult& u) override {
    seen.push_back({s, out.loss, u.grad_norm, u.applied});
  }
  std::vector<std::pair<std::string, double>> log_scalars(int64_t s) override {
    return {{"loss", seen.empty() ? kNaN : seen.back().loss}, {"at", static_cast<double>(s)}};
  }
  void save(const std::string&) override {}
};

struct LoopRun {
  ParamStore ps;
  std::unique_ptr<OptimizerState> opt;
  NonFiniteGuard guard;
  std::unique_ptr<RunDirectory> dir;
  std::unique_ptr<TrainLoop> loop;
  std::unique_ptr<ScriptTask> task;
  std::string error;  // NonFiniteLoss's message, if it stopped
  std::string path;

  LoopRun(const std::string& root, const std::string& name, Device dev, int max_nonfinite, std::vector<double> losses,
      std::vector<int64_t> nan_grads = {}) : guard(max_nonfinite) {
    ps.add("w", {40, 8}, ParamInit::normal(0.5f), true);
    ps.add("b", {8}, ParamInit::constant(0.1f), false);
    ps.finalize();
    ps.init(3);
    ps.to(dev);
    opt = std::make_unique<OptimizerState>(ps, true);
    dir = std::make_unique<RunDirectory>(root, name, "never");
    ConfigSchema schema;
    schema.optional("name", ConfigType::String, name, "");
    dir->open(Config::parse("", schema), false, 0);
    path = dir->path();
    LoopOptions lo;
    lo.log_every_steps = 4;
    lo.update.clip_grad = 1.0;
    lo.update.adamw.weight_decay = 0.05;
    lo.update.ema_decay = 0.9f;
    loop = std::make_unique<TrainLoop>(ps, *opt, guard, *dir, lo);
    task = std::make_unique<ScriptTask>(ps, std::move(losses), std::move(nan_grads));
  }
  void run(int64_t end) {
    try {
      loop->run(*task, 0, end);
    } catch (const NonFiniteLoss& e) {
      error = e.what();
    }
  }
  std::vector<float> host(const Tensor& t) const { return t.to(Device::cpu()).to_vector(); }
  // metrics.jsonl's lines with event "nonfinite".
  std::vector<nlohmann::json> nonfinite_records() const {
    std::vector<nlohmann::json> r;
    std::ifstream f(path + "/metrics.jsonl");
    for (std::string line; std::getline(f, line);) {
      const auto j = nlohmann::json::parse(line);
      if (j.value("event", "") == "nonfinite") r.push_back(j);
    }
    return r;
  }
};

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_NEAR(a[i], b[i], tol * std::max(1.0, std::fabs(static_cast<double>(b[i])))) << what << " [" << i << "]";
}

void expect_same_state(const LoopRun& gpu, const LoopRun& cpu, const std::string& what) {
  expect_close(gpu.host(gpu.ps.weights()), cpu.host(cpu.ps.weights()), 1e-6, what + " weights");
  expect_close(gpu.host(gpu.opt->exp_avg()), cpu.host(cpu.opt->exp_avg()), 1e-6, what + " exp_avg");
  expect_close(gpu.host(gpu.opt->exp_avg_sq()), cpu.host(cpu.opt->exp_avg_sq()), 1e-6, what + " exp_avg_sq");
  expect_close(gpu.host(gpu.opt->ema()), cpu.host(cpu.opt->ema()), 1e-6, what + " ema");
  EXPECT_EQ(gpu.opt->steps(), cpu.opt->steps()) << what;
  EXPECT_EQ(gpu.guard.skipped_total(), cpu.guard.skipped_total()) << what;
}

// The bookkeeping saw every step, in order, with the CPU's losses and norms.
void expect_same_steps(const ScriptTask& gpu, const ScriptTask& cpu) {
  ASSERT_EQ(gpu.seen.size(), cpu.seen.size());
  for (size_t i = 0; i < cpu.seen.size(); ++i) {
    const auto &g = gpu.seen[i], &c = cpu.seen[i];
    EXPECT_EQ(g.step, c.step);
    EXPECT_EQ(g.applied, c.applied) << "step " << c.step;
    if (std::isfinite(c.loss)) EXPECT_NEAR(g.loss, c.loss, 1e-5 * std::fabs(c.loss)) << "step " << c.step;
    else EXPECT_FALSE(std::isfinite(g.loss)) << "step " << c.step;
    if (std::isfinite(c.grad_norm)) EXPECT_NEAR(g.grad_norm, c.grad_norm, 1e-6 * c.grad_norm) << "step " << c.step;
    else EXPECT_FALSE(std::isfinite(g.grad_norm)) << "step " << c.step;
  }
}

// The "nonfinite" lines of metrics.jsonl: step, loss and lr alike, the norm
// up to summation order.
void expect_same_records(const LoopRun& gpu, const LoopRun& cpu) {
  const auto g = gpu.nonfinite_records(), c = cpu.nonfinite_records();
  ASSERT_EQ(g.size(), c.size());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(g[i]["step"], c[i]["step"]);
    EXPECT_EQ(g[i]["loss"], c[i]["loss"]);
    EXPECT_EQ(g[i]["lr"], c[i]["lr"]);
    if (c[i]["grad_norm"].is_number())
      EXPECT_NEAR(g[i]["grad_norm"].get<double>(), c[i]["grad_norm"].get<double>(), 1e-9);
    else
      EXPECT_EQ(g[i]["grad_norm"], c[i]["grad_norm"]);
  }
}

TEST(LoopEmu, StopAtStepKNamesItAndKeepsTheParametersOfStepKMinus1) {
  vt_test::TmpDir tmp;
  const std::vector<double> losses{2.0, 1.5, kNaN, 1.25, 1.0, 0.75};
  LoopRun cpu(tmp.path(), "cpu", Device::cpu(), 0, losses), gpu(tmp.path(), "gpu", Device::cuda(0), 0, losses);
  // The CPU loop stops in step 3's update; its state is that after step 2.
  cpu.run(6);
  gpu.run(6);
  ASSERT_NE(cpu.error.find("at step 3 (batch 3)"), std::string::npos) << cpu.error;
  EXPECT_EQ(gpu.error, cpu.error);  // the device noticed at the read (step 4) but names step 3
  EXPECT_EQ(cpu.opt->steps(), 2);
  expect_same_state(gpu, cpu, "stopped at 3");  // step 4 ran forward/backward on the device, applied nothing
  expect_same_steps(*gpu.task, *cpu.task);      // steps 1, 2 reported; 3 threw
  EXPECT_EQ(cpu.nonfinite_records().size(), 1u);
  expect_same_records(gpu, cpu);
}

TEST(LoopEmu, SkipsAsTheCpuAndStopsAtTheOneTooMany) {
  vt_test::TmpDir tmp;
  // max_nonfinite 2: steps 3-4 (loss) and 6 (gradients) are skipped; 9-11 are
  // three in a row, so 11 stops the run (noticed at the read after step 12).
  const std::vector<double> losses{2, 1.5, kNaN, kNaN, 1.25, 1, 0.75, 0.5, kNaN, kNaN, kNaN, 0.25};
  LoopRun cpu(tmp.path(), "cpu", Device::cpu(), 2, losses, {6}), gpu(tmp.path(), "gpu", Device::cuda(0), 2, losses, {6});
  cpu.run(8);
  gpu.run(8);
  EXPECT_EQ(gpu.error, "");
  EXPECT_EQ(cpu.guard.skipped_total(), 3);
  expect_same_state(gpu, cpu, "8 steps, 3 skipped");
  expect_same_steps(*gpu.task, *cpu.task);
  EXPECT_EQ(cpu.nonfinite_records().size(), 3u);
  expect_same_records(gpu, cpu);
  // Steps 9..12 in a second run() of the same loop: 11 is the one too many.
  for (LoopRun* r : {&cpu, &gpu}) {
    try {
      r->loop->run(*r->task, 8, 12);
    } catch (const NonFiniteLoss& e) {
      r->error = e.what();
    }
  }
  ASSERT_NE(cpu.error.find("at step 11 (batch 11); stopping after 3 consecutive"), std::string::npos) << cpu.error;
  EXPECT_EQ(gpu.error, cpu.error);
  expect_same_state(gpu, cpu, "stopped at 11");
  expect_same_steps(*gpu.task, *cpu.task);
}

TEST(LoopEmu, OneDeviceReadPerLogInterval) {
  vt_test::TmpDir tmp;
  const std::vector<double> losses(12, 1.0);
  LoopRun gpu(tmp.path(), "gpu", Device::cuda(0), 0, losses);
  const size_t before = vt_emu_d2h_count();
  gpu.run(12);
  // log.every_steps 4: reads after steps 4, 8 and 12, and nothing else
  // crosses to the host (the CPU loop's path read loss and norm every step).
  EXPECT_EQ(gpu.loop->reads(), 3);
  EXPECT_EQ(vt_emu_d2h_count() - before, 3u);
  ASSERT_EQ(gpu.task->seen.size(), 12u);
  for (size_t i = 0; i < 12; ++i) EXPECT_EQ(gpu.task->seen[i].loss, 1.0) << "step " << i + 1;
}

}  // namespace
}  // namespace vt
