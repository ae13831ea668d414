// The gradient all-reduce on CUDA buffers: NCCL (ncclAllReduce with
// ncclAvg, fp32) on its own stream, one communicator over all MPI ranks
// (the unique id is made on rank 0 and broadcast with core/dist.h), as
// torch DistributedDataParallel's NCCL backend. Each rank drives the GPU
// of its local rank. Built when VT_CUDA is on and NCCL (nccl.h, libnccl,
// shipped with the CUDA toolkit) is found: VT_NCCL.
//
// Stream order, no host synchronisation: the NCCL stream waits for an event
// recorded on the compute stream (the backward pass that wrote the
// gradients), runs the all-reduce, and the compute stream waits for an
// event recorded after it, so the optimizer kernels queued next read the
// reduced gradients. Bucketed (train/grad_allreduce_bucketed.h): each
// mean_range waits on an event recorded on the compute stream when it is
// issued (the kernels that wrote that range are queued before it), so a
// bucket's all-reduce runs while the compute stream goes on with the rest
// of the backward pass; finish() makes the compute stream wait for the
// last one (the NCCL stream runs them in order).
//
// Timeout (dist.timeout_s, core/dist_watchdog.h): the host never waits for
// the all-reduces, so with several ranks and a timeout set each one is
// followed by an event on the NCCL stream and registered with the
// watchdog, whose thread polls the oldest one still running
// (cudaEventQuery) and the communicator's asynchronous error
// (ncclCommGetAsyncError), as PyTorch's NCCL watchdog does. One that has not
// completed within the timeout (a dead or stuck peer) makes the watchdog
// write "rank R of W (host H): distributed timeout: NCCL all-reduce of
// gradient bucket K (N floats) at step S did not complete within T s
// (dist.timeout_s); ...", then call ncclCommAbort (waiting no more than
// kAbortDeadlineSeconds for it, core/dist_watchdog.h), then end the job
// with exit status 4 (kExitDistTimeout, core/exit_status.h); K counts the
// step's all-reduces from 0 in the order they were issued (0 alone when one
// reduction serves the step); the buffer first reduced is taken for the
// gradients, any other is named "the step's device scalars" (train/loop.cpp
// reduces them after the gradients). An asynchronous error is written,
// naming the bucket, the step and NCCL's error, then aborts the
// communicator in the same way and ends the job with exit status 1.
// Once aborted, the communicator is used no more: a mean_range blocked in
// ncclAllReduce when the abort began, or called after it (the main thread
// goes on until the job ends), waits for the job to end instead of calling
// NCCL or throwing, and the destructor does not destroy it.
//
// Checked without a GPU under the CUDA emulator (tests/cuda/emu/nccl_emu.cpp
// forwards the NCCL calls to MPI; ctest emu.nccl_allreduce_np2/np3); the
// real NCCL runs only on a GPU machine (scripts/gpu_check.sh, a world of 1).
// The timeout, the asynchronous error and an abort that hangs: ctest
// emu.nccl_timeout_np2, emu.nccl_async_error_np2, emu.nccl_abort_hang_np2.
#pragma once
#include <memory>

#include "train/grad_allreduce.h"

namespace vt {

class NcclGradientAllReduce : public GradientAllReduce {
 public:
  // Collective: every rank constructs it, after cudaSetDevice(local rank).
  // compute_stream: the cudaStream_t the gradients are written on, passed
  // as an opaque handle (nullptr: the default stream, which the op
  // library uses). Throws std::runtime_error with NCCL's/CUDA's message.
  explicit NcclGradientAllReduce(void* compute_stream = nullptr);
  ~NcclGradientAllReduce() override;
  // grads[offset, offset + numel): contiguous fp32 on this rank's CUDA
  // device, replaced by the mean over ranks in stream order (see above);
  // returns without waiting. Throws std::invalid_argument for a host or
  // non-fp32 tensor, or a range outside it.
  void mean_range(Tensor& grads, int64_t offset, int64_t numel) override;
  void finish() override;
  bool overlaps() const override { return true; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vt
