// The one gradient all-reduce of a data-parallel step: after every rank's
// forward/backward on its share of the global batch, the flat fp32 gradient
// buffer (ParamStore::grads(), every parameter's gradient back to back)
// becomes the mean over ranks, as torch DistributedDataParallel's
// all-reduce (sum, then / world). Each rank's loss is the mean over its
// own rows, so with equal per-rank batches the mean of the ranks' gradients
// is the gradient of the mean loss over the global batch.
//
// Implementations: MPI_Allreduce on host buffers (this file); NCCL on CUDA
// buffers (train/grad_allreduce_nccl.h, built with VT_CUDA and NCCL). The
// training loop picks one by the device of the gradients.
#pragma once
#include <cstddef>
#include <memory>

#include "core/tensor.h"

namespace vt {

class GradientAllReduce {
 public:
  virtual ~GradientAllReduce() = default;
  // grads: the flat fp32 gradient buffer, contiguous; replaced in place by
  // the element-wise mean over all ranks. Collective: every rank calls it
  // once per step, with buffers of the same size.
  virtual void mean(Tensor& grads) = 0;
};

// MPI_Allreduce(MPI_SUM) over core/dist.h, then a scale by 1 / world.
// Throws std::invalid_argument for a non-fp32 or device tensor.
class MpiGradientAllReduce : public GradientAllReduce {
 public:
  void mean(Tensor& grads) override;
};

// The reducer for gradients on `device`: nullptr in a single process; MPI
// for CPU buffers; NCCL for CUDA buffers (collective then: every rank calls
// it). Throws std::runtime_error for CUDA gradients in a build without NCCL
// (VT_NCCL), naming the world size.
std::unique_ptr<GradientAllReduce> make_gradient_allreduce(Device device = Device::cpu());

// The mean over ranks of a scalar (a loss, a metric): one MPI_Allreduce.
double mean_over_ranks(double value);

}  // namespace vt
