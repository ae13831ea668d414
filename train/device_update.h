// The update of a GPU training step without a host wait (docs/design.md §2,
// "Deferred reads"): per step, update_prepare (kernels/optim.h) reduces the
// gradient norm on the device, runs the non-finite policy there (skip,
// count, stop; as torch's GradScaler keeps found_inf on the device) and
// writes the step's record (status, grad norm, the task's scalars) into the
// next row of a device buffer; fused_update then applies clip, AdamW, the
// bf16 weight copy and the EMA in one pass, or nothing for a skipped step.
// read() brings the rows of all steps since the last read to the host in
// one copy; TrainLoop replays the host side of the policy on them (metrics
// records, warnings, NonFiniteLoss) and the task's bookkeeping.
//
// The device keeps its own AdamW update count and consecutive-skip count,
// started from the OptimizerState and NonFiniteGuard it is built from; the
// host copies advance when the records are read.
#pragma once
#include <cstdint>
#include <vector>

#include "backbone/optimizer_state.h"
#include "train/nonfinite.h"
#include "train/update_step.h"

namespace vt {

class DeviceUpdate {
 public:
  // capacity: the most steps between two reads (>= 1). The objects must
  // outlive this one.
  DeviceUpdate(ParamStore& params, OptimizerState& opt, const NonFiniteGuard& guard, const UpdateOptions& o,
               int64_t capacity);

  // The update of one step whose gradients are in params.grads(). scalars:
  // F32 [k] on the gradients' device, scalars[0] the loss (the mean over
  // ranks), the rest whatever the task wants back at the read; k stays the
  // same for the whole run. lr: this step's learning rate.
  void launch(const Tensor& scalars, double lr);

  // The same update for a CUDA Graph step (train/step_graph.h), whose
  // launches read everything that changes per step from fixed device memory:
  // set_step writes the step's learning rate there (one host->device copy,
  // before the graph launch; it also makes the buffers, outside any
  // capture); launch_fixed queues update_prepare (rate read on the device,
  // record into a fixed row) and fused_update, with no host work, so it can
  // be captured; commit, after the step's launch, copies the fixed row into
  // the next record row (device to device). Same math, same bits as launch.
  void set_step(const Tensor& scalars, double lr);
  void launch_fixed(const Tensor& scalars);
  void commit();

  int64_t pending() const { return pending_; }
  bool full() const { return pending_ == capacity_; }

  struct Record {
    int status = 0;          // UpdateStatus (kernels/optim_step.h)
    double grad_norm = 0;    // before clipping
    std::vector<double> scalars;  // the step's scalars as launched
  };
  // The pending steps' records in step order, by one device->host copy
  // (none when nothing is pending); empties the buffer.
  std::vector<Record> read();

 private:
  ParamStore& params_;
  OptimizerState& opt_;
  UpdateOptions o_;
  int64_t capacity_;
  int64_t max_nonfinite_;
  int64_t k_ = 0;  // scalars per step
  int64_t pending_ = 0;
  Tensor state_;    // I64 [kUpdateStateWords] (UpdateState)
  Tensor records_;  // I64 [capacity, kUpdateRecordHead + k] holding doubles
  Tensor lr_;       // graph steps: I64 [1] holding the step's learning rate (double)
  Tensor row_;      // graph steps: I64 [kUpdateRecordHead + k], the step's record
  void make_records(const Tensor& scalars);
  UpdateHyper hyper(double lr) const;
};

}  // namespace vt
