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
// training loop picks one by the device of the gradients. A reducer that
// overlaps() its caller (NCCL on its own stream) is driven bucket by bucket
// during the backward pass (train/grad_allreduce_bucketed.h); the MPI one
// reduces the whole buffer after it.
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
  // once per step, with buffers of the same size. mean_range(grads, 0,
  // numel), then finish().
  void mean(Tensor& grads);
  // The same for grads[offset, offset + numel) only (one bucket), issued
  // now; with overlaps() it may still run when this returns. Collective:
  // every rank issues the same ranges in the same order. Throws
  // std::invalid_argument for a buffer this reducer cannot take or a range
  // outside it.
  virtual void mean_range(Tensor& grads, int64_t offset, int64_t numel) = 0;
  // Orders whatever reads the gradients next (the update step) after every
  // range issued so far.
  virtual void finish() {}
  // Whether issued ranges run concurrently with the caller's next work, so
  // reducing buckets during the backward pass hides their time.
  virtual bool overlaps() const { return false; }
};

// MPI_Allreduce(MPI_SUM) over core/dist.h, then a scale by 1 / world;
// blocking, so it does not overlap: the loop reduces CPU gradients in one
// call after the backward pass (which also keeps MPI's summation order, and
// so the CPU path's results, independent of any bucket size).
// Throws std::invalid_argument for a non-fp32 or device tensor.
class MpiGradientAllReduce : public GradientAllReduce {
 public:
  void mean_range(Tensor& grads, int64_t offset, int64_t numel) override;
};

// Throws std::invalid_argument unless [offset, offset + numel) lies inside
// grads (numel >= 1); `who` names the caller.
void check_grad_range(const char* who, const Tensor& grads, int64_t offset, int64_t numel);

// The reducer for gradients on `device`: nullptr in a single process; MPI
// for CPU buffers; NCCL for CUDA buffers (collective then: every rank calls
// it). Throws std::runtime_error for CUDA gradients in a build without NCCL
// (VT_NCCL), naming the world size.
std::unique_ptr<GradientAllReduce> make_gradient_allreduce(Device device = Device::cpu());

// The mean over ranks of a scalar (a loss, a metric): one MPI_Allreduce.
double mean_over_ranks(double value);

}  // namespace vt
