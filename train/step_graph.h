// CUDA Graph replay of the GPU training step (train.cuda_graph: auto;
// docs/design.md §2, "CUDA Graphs"). A GPU step is a few hundred small
// launches (more with a deep model); replaying them as one graph takes the
// host's launch cost out of the step, which is what bounds small models.
//
// What runs where, per step (TrainLoop::run, StepTask::splits_step):
//  - host, eager: the task's prepare_step — the next batch copied from the
//    uploader's slot into the task's fixed device buffers (two slots
//    alternate, so one fixed input buffer costs one device-to-device copy
//    per step instead of a graph per slot, and keeps every later address
//    fixed), the host's draws and the kernels keyed by them (Mixup/CutMix
//    with the host's decision, DiT's Philox noise keyed by the step), the
//    step number the drop-path kernels key their masks with
//    (Backbone::set_step_source), and DeviceUpdate::set_step writing the
//    learning rate to the device;
//  - captured once, then replayed: the task's device_step (forward, loss,
//    backward) and the device update (update_prepare reads the rate from the
//    device; AdamW's step count, bias corrections, clip factor and the
//    non-finite policy already live in the device state, kernels/optim_step.h);
//  - host, eager: the record row copied into the read buffer, the task's
//    finish_step (prefetch of the next batch).
// So nothing a replay reads by value changes from step to step.
//
// Policy (StepGraph::run): the first step of each TrainLoop::run call is
// eager (it plans the workspaces for the batch shape, which evaluation
// between two calls may have changed); the next replayable step is captured
// into a graph and launched, later steps launch it. A step the task marks
// not replayable (a batch of another shape) runs eagerly and drops the graph
// (its workspaces may move); the next steps warm up and capture again. A
// capture the runtime refuses (e.g. work on a stream it cannot capture, or a
// host read inside the step) turns graphs off for the loop. Every fallback
// logs one line per reason.
#pragma once
#include <cstdint>
#include <functional>
#include <set>
#include <string>

#include "core/cuda_graph.h"

namespace vt {

class StepGraph {
 public:
  // Runs one step's device work: eagerly, or by launching the captured graph
  // (capturing it first when due). not_replayable: empty, or why this step
  // cannot be a replay of the captured one (then it runs eagerly).
  void run(const std::function<void()>& work, const std::string& not_replayable);
  // Drops the graph; the next steps warm up again (end of TrainLoop::run).
  void reset();

  bool ready() const { return graph_.ready(); }  // a captured graph is held
  int64_t replays() const { return replays_; }  // graph launches (the capturing step's included)
  int64_t eager() const { return eager_; }      // steps run eagerly

  // Logs "<what>" once per process and reason.
  static void note(const std::string& what);

 private:
  CudaGraph graph_;
  int64_t warm_ = 0;
  bool refused_ = false;
  int64_t replays_ = 0, eager_ = 0;
};

}  // namespace vt
