// Runs a model's step function under the trainers' loop (train/loop.h), so
// the step benchmarks (bench/step_bench.h) and the CPU-vs-GPU agreement
// programs (bench/gpu/check_*_device) apply the update exactly as vtrain and
// dittrain do: on a GPU the fused clip/AdamW/bf16-copy/EMA pass with the
// non-finite policy on the device and deferred reads (train/device_update.h),
// on the CPU apply_update (train/update_step.h). Nothing is written: the
// loop's run directory is never opened (no metrics lines, no checkpoints;
// a non-finite loss therefore ends the run with an error).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "train/loop.h"
#include "train/run_dir.h"

namespace vt_bench {

// A StepTask around a function that runs step s's forward and backward and
// returns its Output (CPU: loss; GPU: the device scalars, loss first).
class FunctionStepTask : public vt::StepTask {
 public:
  using Step = std::function<Output(int64_t)>;
  explicit FunctionStepTask(Step step) : step_(std::move(step)) {}
  // The same step in the trainers' two parts, for CUDA Graph steps
  // (train/loop.h StepTask::prepare_step/device_step): `prepare(s)` the host
  // part returning what step(s) returns, `device()` the fixed device part.
  // Unset: the loop runs step(s) eagerly.
  std::function<Output(int64_t)> prepare;
  std::function<void()> device;
  std::function<void(int64_t)> on_start;  // called before step s (timing marks)
  std::function<void(int64_t)> on_end;    // called after step s's update was launched
  std::vector<double> losses;             // per step in order, as the loop read them

  Output forward_backward(int64_t s) override {
    if (on_start) on_start(s);
    return step_(s);
  }
  void after_update(int64_t, const Output& out, const vt::UpdateResult&) override { losses.push_back(out.loss); }
  std::vector<std::pair<std::string, double>> log_scalars(int64_t) override { return {}; }
  void after_step(int64_t s) override {
    if (on_end) on_end(s);
  }
  void save(const std::string&) override {}
  bool splits_step() const override { return prepare && device; }
  Output prepare_step(int64_t s, std::string*) override {
    if (on_start) on_start(s);
    return prepare(s);
  }
  void device_step() override { device(); }

 private:
  Step step_;
};

// The loop with the update options `u`; the learning rate is each step's
// Output::lr. cuda_graph: train.cuda_graph (auto = true), used when the task
// splits its step.
class LoopHarness {
 public:
  LoopHarness(vt::ParamStore& ps, vt::OptimizerState& opt, const vt::UpdateOptions& u, bool cuda_graph = false)
      : run_(std::filesystem::temp_directory_path().string(), "vt_bench_loop_unused", "never"),
        loop_(ps, opt, guard_, run_, options(u, cuda_graph)) {}
  // Steps first + 1 .. end; every step's loss is read when it returns.
  void run(FunctionStepTask& task, int64_t first, int64_t end) { loop_.run(task, first, end); }
  const vt::TrainLoop& loop() const { return loop_; }

 private:
  static vt::LoopOptions options(const vt::UpdateOptions& u, bool cuda_graph) {
    vt::LoopOptions lo;
    lo.update = u;
    lo.cuda_graph = cuda_graph;
    return lo;
  }
  vt::NonFiniteGuard guard_{0};
  vt::RunDirectory run_;
  vt::TrainLoop loop_;
};

}  // namespace vt_bench
