// The gradient all-reduce on CUDA buffers: NCCL (ncclAllReduce with
// ncclAvg, fp32) on its own stream, one communicator over all MPI ranks
// (the unique id is made on rank 0 and broadcast with core/dist.h), as
// torch DistributedDataParallel's NCCL backend. Each rank drives the GPU
// of its local rank. Built when VT_CUDA is on and NCCL (nccl.h, libnccl,
// shipped with the CUDA toolkit) is found: VT_NCCL. Not bucketed yet: the
// one flat buffer is reduced after the backward pass.
#pragma once
#include <memory>

#include "train/grad_allreduce.h"

namespace vt {

class NcclGradientAllReduce : public GradientAllReduce {
 public:
  // Collective: every rank constructs it, after cudaSetDevice(local rank).
  // Throws std::runtime_error with NCCL's/CUDA's message on failure.
  NcclGradientAllReduce();
  ~NcclGradientAllReduce() override;
  // grads: contiguous fp32 on this rank's CUDA device; returns once the
  // reduced values are in place (the stream is synchronised).
  // Throws std::invalid_argument for a host or non-fp32 tensor.
  void mean(Tensor& grads) override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vt
