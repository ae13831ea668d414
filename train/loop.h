// The step loop both trainers run, in the shape of Caffe's Solver::Step with
// a per-solver hook: per step the model's StepTask runs forward/backward,
// then the shared update (train/update_step.h: gradient norm and clipping,
// the non-finite policy, AdamW, EMA), then the cadences: a metrics line
// every log.every_steps, the task's after_step (dittrain: sample grids),
// a checkpoint every ckpt.every_steps. The task keeps its own position
// (epoch, batch) and decides what an epoch end means (vtrain: evaluation
// and epoch checkpoints around TrainLoop::run).
//
// Gradients on a GPU (docs/design.md §2, "Deferred reads"): the step's
// loss stays a device scalar (Output::scalars) and the update runs on the
// device without a host wait (train/device_update.h). The host reads the
// records of all steps since the last read in one copy at a metrics line,
// before a checkpoint, when the record buffer is full (log.every_steps
// steps; 256 without metrics lines) and at the end of run(); only then does
// it replay the non-finite policy's host side (metrics records, warnings,
// NonFiniteLoss naming the step that stopped) and call after_update for
// each of those steps in order, with Output::loss filled. after_step runs
// per step, before the step's after_update.
//
// CUDA Graphs (LoopOptions::cuda_graph, train/step_graph.h): with one GPU
// process and a task that splits its step (StepTask::splits_step), the
// step's device part and the update are captured once per run() after an
// eager first step and replayed; everything else above is unchanged.
//
// Data parallel (core/dist.h): after each forward_backward the loop replaces
// the gradients by their mean over ranks (train/grad_allreduce.h) and the
// step's loss (on a GPU: all its scalars) by its mean over ranks, before
// clipping, the non-finite policy and AdamW, so every rank takes the same
// decision and the same update; only rank 0 writes (RunDirectory). CUDA
// gradients (NCCL) are reduced in buckets issued during the backward pass
// (train/grad_allreduce_bucketed.h, LoopOptions::allreduce_bucket_mb); CPU
// gradients in one MPI_Allreduce after it.
//
// Stop requests (core/stop_request.h, LoopOptions::cluster.stop_signals,
// installed when the loop is made): after each step but the last of run(),
// the ranks agree on whether a stop signal arrived (one small all-reduce;
// rank 0 alone in a single process); if one did, the loop reads the pending
// device records, writes a checkpoint of that step (unless the step's
// periodic one was just written) and throws StopRequested. The caller
// checks at its own boundaries with check_stop() (vtrain: after an epoch's
// evaluation). The loop also sets the collective timeout
// (cluster.dist_timeout_s, core/dist_watchdog.h), the step it names, and the
// run directory's checkpoint write policy (cluster.retry_checkpoint_write;
// a stop checkpoint is never deferred).
//
// Test hook: VT_TEST_RANK_SLEEP="RANK:STEP:SECONDS" makes rank RANK sleep
// SECONDS before step STEP (a rank that stops answering, for the
// collective-timeout test); read here only.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backbone/optimizer_state.h"
#include "train/cluster_keys.h"
#include "train/device_update.h"
#include "train/grad_allreduce.h"
#include "train/grad_allreduce_bucketed.h"
#include "train/nonfinite.h"
#include "train/step_graph.h"
#include "train/update_step.h"

namespace vt {

class RunDirectory;

class StepTask {
 public:
  virtual ~StepTask() = default;
  struct Output {
    double loss = 0;    // this rank's batch's mean training loss; the loop makes it the mean over ranks
                        // (GPU: filled by the loop at the read, from scalars[0])
    double lr = 0;      // learning rate of this step
    std::string where;  // context for messages ("epoch 3, batch 17")
    // GPU steps: F32 [k] on the gradients' device, [0] the loss, then what
    // the task wants back in `values` (the same k every step). The loop
    // makes them means over ranks. Undefined on the CPU.
    Tensor scalars;
    // GPU: the host copy of scalars, filled at the read; CPU: whatever the
    // task puts there.
    std::vector<double> values;
  };
  // Step `step` (1-based): the next batch's forward and backward into the
  // model's gradients (zeroed by the task).
  virtual Output forward_backward(int64_t step) = 0;
  // Bookkeeping once the update of `step` is applied or skipped (losses,
  // progress, accumulated metrics); on a GPU called at the read, so
  // anything the next forward_backward needs (step counters) belongs there.
  virtual void after_update(int64_t step, const Output& out, const UpdateResult& u) = 0;
  // The scalars of the train metrics line written at `step`.
  virtual std::vector<std::pair<std::string, double>> log_scalars(int64_t step) = 0;
  // Between the metrics line and the step checkpoint (dittrain: sample grids).
  virtual void after_step(int64_t step) {}
  // Writes a checkpoint of the current state; `why` is for the log.
  virtual void save(const std::string& why) = 0;

  // CUDA Graph steps (LoopOptions::cuda_graph, train/step_graph.h): a task
  // whose GPU step splits into host work and a fixed device part returns
  // true here, and on a GPU with one rank the loop then runs each step as
  //   prepare_step(step, &why)  the host part (the batch copied into the
  //       task's fixed device buffers, host draws, kernels keyed by them);
  //       returns what forward_backward returns (scalars: the same tensor
  //       every step). Sets why when this step's device part would not
  //       launch what the previous steps launched (a batch of another shape);
  //   device_step()  forward and backward on those buffers: only device work
  //       on the compute stream, no host reads or waits, every kernel
  //       argument the same each step (captured once, then replayed);
  //   finish_step()  once the step is queued (prefetch, position).
  // The three together compute exactly what forward_backward computes.
  virtual bool splits_step() const { return false; }
  virtual Output prepare_step(int64_t step, std::string* not_replayable) { return forward_backward(step); }
  virtual void device_step() {}
  virtual void finish_step() {}
};

struct LoopOptions {
  int64_t log_every_steps = 0;   // 0: no metrics lines
  int64_t ckpt_every_steps = 0;  // 0: no step checkpoints
  bool log_at_end = false;       // also a metrics line at the last step of run()
  bool ckpt_at_end = false;      // also a checkpoint at the last step of run()
  // Gradient buckets of the data-parallel all-reduce, MiB (torch DDP's
  // bucket_cap_mb; train.allreduce_bucket_mb): 0 reduces the whole buffer
  // after the backward pass. Used only by a reducer that overlaps (NCCL).
  double allreduce_bucket_mb = 25;
  // train.cuda_graph: auto (true) replays the step as a CUDA Graph when the
  // gradients are on a GPU, one rank trains and the task splits its step
  // (train/step_graph.h); off (false) or otherwise: eager steps. No effect
  // on the CPU.
  bool cuda_graph = false;
  UpdateOptions update;
  // Stop signals (none by default), dist.timeout_s, ckpt.on_write_error.
  ClusterOptions cluster;
};

class TrainLoop {
 public:
  // All referenced objects must outlive the loop.
  // Installs o.cluster's stop signals and sets the collective timeout.
  TrainLoop(ParamStore& params, OptimizerState& opt, NonFiniteGuard& guard, RunDirectory& run, LoopOptions o);

  // Runs steps first + 1 .. end; returns end (every step read and
  // accounted for). Throws NonFiniteLoss when the policy stops (on a GPU at
  // the first read after the stopping step; no update is applied after
  // it), StopRequested after a stop request (see above), and whatever the
  // task throws.
  int64_t run(StepTask& task, int64_t first, int64_t end);

  // Collective (every rank at the same point): when a stop was requested,
  // writes a checkpoint of the current state through task.save (unless
  // `saved`: the state at `step` is already in one) and throws StopRequested.
  void check_stop(StepTask& task, int64_t step, bool saved);

  // Device->host reads of step records so far (GPU; counts DeviceUpdate::read calls that copied).
  int64_t reads() const { return reads_; }
  // CUDA Graph steps so far: launches of the captured step, and split steps run eagerly.
  int64_t graph_replays() const { return graph_.replays(); }
  int64_t graph_eager_steps() const { return graph_.eager(); }

 private:
  ParamStore& params_;
  OptimizerState& opt_;
  NonFiniteGuard& guard_;
  RunDirectory& run_;
  LoopOptions o_;
  // Made before the first step for the gradients' device (MPI for CPU,
  // NCCL for CUDA buffers); stays null in a single process. buckets_: when
  // the reducer overlaps and buckets are on.
  std::unique_ptr<GradientAllReduce> allreduce_;
  std::unique_ptr<BucketedGradientAllReduce> buckets_;
  bool allreduce_made_ = false;
  // GPU: the device update and the steps launched but not read yet.
  std::unique_ptr<DeviceUpdate> device_;
  std::vector<std::pair<int64_t, StepTask::Output>> unread_;
  int64_t reads_ = 0;
  StepGraph graph_;
  const void* graph_scalars_ = nullptr;  // the scalars the captured update reads
  // Whether this step runs split (prepare/device/finish, graph or eager).
  bool graph_step(StepTask& task, bool on_device);
  StepTask::Output run_graph_step(StepTask& task, int64_t s);
  // Reads the pending records and runs, per step in order, the host side of
  // the policy and task.after_update.
  void read_device(StepTask& task);
  void make_device_update();
  [[noreturn]] void stop(StepTask& task, int64_t step, int signo, bool saved);
};

}  // namespace vt
