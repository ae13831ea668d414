#include "train/loop.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>

#include "core/dist.h"
#include "core/dist_watchdog.h"
#include "core/log.h"
#include "core/stop_request.h"
#include "train/run_dir.h"

namespace vt {

namespace {
// Records between two reads when no metrics line bounds them.
constexpr int64_t kUnloggedReadEvery = 256;

// VT_TEST_RANK_SLEEP="RANK:STEP:SECONDS" (train/loop.h): this rank sleeps
// before step STEP.
void test_rank_sleep(int64_t step) {
  static const char* spec = std::getenv("VT_TEST_RANK_SLEEP");
  if (!spec || !*spec) return;
  int rank = -1;
  long long at = -1;
  double seconds = 0;
  if (std::sscanf(spec, "%d:%lld:%lf", &rank, &at, &seconds) != 3) return;
  if (rank != dist().rank() || at != step) return;
  std::fprintf(stderr, "rank %d: VT_TEST_RANK_SLEEP: sleeping %.0f s before step %lld\n", rank, seconds, at);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace

TrainLoop::TrainLoop(ParamStore& params, OptimizerState& opt, NonFiniteGuard& guard, RunDirectory& run, LoopOptions o)
    : params_(params), opt_(opt), guard_(guard), run_(run), o_(std::move(o)) {
  if (!o_.cluster.stop_signals.empty()) install_stop_signals(o_.cluster.stop_signals);
  dist_set_timeout(o_.cluster.dist_timeout_s);
  run_.set_retry_checkpoint_write(o_.cluster.retry_checkpoint_write);
}

void TrainLoop::check_stop(StepTask& task, int64_t step, bool saved) {
  if (const int sig = agreed_stop_signal()) stop(task, step, sig, saved);
}

void TrainLoop::stop(StepTask& task, int64_t step, int signo, bool saved) {
  if (dist().is_root())
    log().warn("{} received: stopping after step {}{}", signal_name(signo), step,
               saved ? " (its checkpoint is written)" : ", writing a checkpoint");
  if (device_) read_device(task);
  graph_.reset();
  if (!saved) {
    run_.set_retry_checkpoint_write(false);  // the run ends here: a failed write is an error
    task.save("stop: " + signal_name(signo));
  }
  throw StopRequested(signo, step, run_.last_checkpoint());
}

int64_t TrainLoop::run(StepTask& task, int64_t first, int64_t end) {
  for (int64_t s = first + 1; s <= end; ++s) {
    dist_set_step(s);
    test_rank_sleep(s);
    if (!allreduce_made_) {
      allreduce_ = make_gradient_allreduce(params_.device());
      const int64_t cap = bucket_cap_elements(o_.allreduce_bucket_mb);
      if (allreduce_ && allreduce_->overlaps() && cap > 0)
        buckets_ = std::make_unique<BucketedGradientAllReduce>(params_, *allreduce_, cap);
      allreduce_made_ = true;
    }
    const bool on_device = !params_.grads().device().is_cpu();
    const bool split = graph_step(task, on_device);
    if (buckets_) buckets_->begin_step();
    StepTask::Output out = split ? run_graph_step(task, s) : task.forward_backward(s);
    if (allreduce_) {
      if (buckets_) {
        buckets_->finish();
      } else {
        Tensor g = params_.grads();
        allreduce_->mean(g);
      }
      if (on_device) allreduce_->mean(out.scalars);
      else out.loss = mean_over_ranks(out.loss);
    }
    const bool log_now = o_.log_every_steps > 0 && (s % o_.log_every_steps == 0 || (o_.log_at_end && s == end));
    const bool ckpt_now = (o_.ckpt_every_steps > 0 && s % o_.ckpt_every_steps == 0) || (o_.ckpt_at_end && s == end);
    if (on_device) {
      if (!out.scalars.defined())
        throw std::logic_error("TrainLoop: a step on " + params_.grads().device().str() + " without device scalars");
      make_device_update();
      if (!split) device_->launch(out.scalars, out.lr);  // (a split step's update ran inside it)
      unread_.emplace_back(s, std::move(out));
      if (log_now || ckpt_now || device_->full()) read_device(task);
    } else {
      const UpdateResult u = apply_update(params_, opt_, guard_, run_, s, out.loss, out.lr, o_.update, out.where);
      task.after_update(s, out, u);
    }
    if (log_now) run_.write_metrics(s, task.log_scalars(s), {{"split", "train"}}, "train");
    task.after_step(s);
    bool saved = true;
    if (o_.ckpt_every_steps > 0 && s % o_.ckpt_every_steps == 0)
      task.save("every " + std::to_string(o_.ckpt_every_steps) + " steps");
    else if (o_.ckpt_at_end && s == end)
      task.save("end");
    else
      saved = false;
    if (s < end) check_stop(task, s, saved);
  }
  if (device_) read_device(task);  // the epoch's or run's end: evaluation and the caller see every step
  graph_.reset();  // evaluation between two runs may plan other workspaces
  return end;
}

void TrainLoop::make_device_update() {
  if (device_) return;
  const int64_t cap = o_.log_every_steps > 0 ? o_.log_every_steps : kUnloggedReadEvery;
  device_ = std::make_unique<DeviceUpdate>(params_, opt_, guard_, o_.update, cap);
}

bool TrainLoop::graph_step(StepTask& task, bool on_device) {
  if (!o_.cuda_graph || !on_device) return false;
  if (allreduce_) {
    StepGraph::note("cuda_graph: eager steps (several ranks: the NCCL all-reduce is not captured)");
    return false;
  }
  if (!task.splits_step()) {
    StepGraph::note("cuda_graph: eager steps (this task's step does not split into host and device parts)");
    return false;
  }
  return true;
}

// prepare (host) -> [device_step + the update] (graph or eager) -> the
// record row -> finish (host); train/step_graph.h.
StepTask::Output TrainLoop::run_graph_step(StepTask& task, int64_t s) {
  std::string why;
  StepTask::Output out = task.prepare_step(s, &why);
  if (!out.scalars.defined())
    throw std::logic_error("TrainLoop: a step on " + params_.grads().device().str() + " without device scalars");
  make_device_update();
  device_->set_step(out.scalars, out.lr);
  // The captured update reads the scalars where they were at the capture.
  if (why.empty() && graph_.ready() && out.scalars.raw() != graph_scalars_)
    throw std::logic_error("TrainLoop: the task's step scalars moved after the step was captured");
  const Tensor scalars = out.scalars;
  graph_.run(
      [&] {
        task.device_step();
        device_->launch_fixed(scalars);
      },
      why);
  graph_scalars_ = out.scalars.raw();
  device_->commit();
  task.finish_step();
  return out;
}

void TrainLoop::read_device(StepTask& task) {
  if (unread_.empty()) return;
  const std::vector<DeviceUpdate::Record> recs = device_->read();
  ++reads_;
  if (recs.size() != unread_.size()) throw std::logic_error("TrainLoop: step records out of step with the steps run");
  std::vector<std::pair<int64_t, StepTask::Output>> steps;
  steps.swap(unread_);
  for (size_t i = 0; i < recs.size(); ++i) {
    const DeviceUpdate::Record& r = recs[i];
    const int64_t s = steps[i].first;
    StepTask::Output& out = steps[i].second;
    out.values = r.scalars;
    out.loss = r.scalars.at(0);
    UpdateResult u;
    u.grad_norm = r.grad_norm;
    u.applied = r.status == kUpdateApplied;
    // The host side of the policy, as apply_update runs it on the CPU: the
    // record first, then the guard (which throws for the stopping step).
    if (!std::isfinite(out.loss) || !std::isfinite(u.grad_norm))
      run_.write_metrics(s, {{"loss", out.loss}, {"grad_norm", u.grad_norm}, {"lr", out.lr}},
                         {{"split", "train"}, {"event", "nonfinite"}}, "train");
    const bool host_applies = guard_.check(s, out.loss, u.grad_norm, out.where, run_.last_checkpoint());
    if (host_applies != u.applied)
      throw std::logic_error("TrainLoop: the device's non-finite decision at step " + std::to_string(s) +
                             " differs from the host's");
    if (u.applied) opt_.set_steps(opt_.steps() + 1);
    task.after_update(s, out, u);
  }
}

}  // namespace vt
