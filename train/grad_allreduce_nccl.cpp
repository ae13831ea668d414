#include "train/grad_allreduce_nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

#include "core/dist.h"

namespace vt {

namespace {

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("NCCL ") + what + ": " + ncclGetErrorString(r));
}
void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(r));
}

}  // namespace

struct NcclGradientAllReduce::Impl {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;   // NCCL's own
  cudaStream_t compute = nullptr;  // where the gradients are written and read
  cudaEvent_t grads_ready = nullptr, reduced = nullptr;
};

NcclGradientAllReduce::NcclGradientAllReduce(void* compute_stream) : impl_(std::make_unique<Impl>()) {
  const Dist& d = dist();
  impl_->compute = static_cast<cudaStream_t>(compute_stream);
  ncclUniqueId id{};
  if (d.is_root()) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  d.broadcast(&id, sizeof id, 0);
  // Non-blocking: no implicit ordering with the legacy default stream; the
  // two events below order the streams instead.
  check(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaEventCreateWithFlags(&impl_->grads_ready, cudaEventDisableTiming), "cudaEventCreate");
  check(cudaEventCreateWithFlags(&impl_->reduced, cudaEventDisableTiming), "cudaEventCreate");
  check(ncclCommInitRank(&impl_->comm, d.world(), id, d.rank()), "ncclCommInitRank");
}

NcclGradientAllReduce::~NcclGradientAllReduce() {
  if (impl_->comm) ncclCommDestroy(impl_->comm);
  if (impl_->grads_ready) cudaEventDestroy(impl_->grads_ready);
  if (impl_->reduced) cudaEventDestroy(impl_->reduced);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

void NcclGradientAllReduce::mean_range(Tensor& grads, int64_t offset, int64_t numel) {
  if (grads.dtype() != DType::F32 || !grads.device().is_cuda() || !grads.is_contiguous())
    throw std::invalid_argument("NcclGradientAllReduce: gradients must be a contiguous fp32 CUDA buffer, got " +
                                std::string(dtype_name(grads.dtype())) + " on " + grads.device().str());
  check_grad_range("NcclGradientAllReduce", grads, offset, numel);
  float* p = static_cast<float*>(grads.raw()) + offset;
  // One event serves every bucket: a wait binds to the event's latest
  // record at the time of the wait call, so re-recording it for the next
  // bucket does not move this one's.
  check(cudaEventRecord(impl_->grads_ready, impl_->compute), "cudaEventRecord");
  check(cudaStreamWaitEvent(impl_->stream, impl_->grads_ready, 0), "cudaStreamWaitEvent");
  check(ncclAllReduce(p, p, static_cast<size_t>(numel), ncclFloat, ncclAvg, impl_->comm, impl_->stream),
        "ncclAllReduce");
}

void NcclGradientAllReduce::finish() {
  check(cudaEventRecord(impl_->reduced, impl_->stream), "cudaEventRecord");
  check(cudaStreamWaitEvent(impl_->compute, impl_->reduced, 0), "cudaStreamWaitEvent");
}

}  // namespace vt
