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
  cudaStream_t stream = nullptr;
};

NcclGradientAllReduce::NcclGradientAllReduce() : impl_(std::make_unique<Impl>()) {
  const Dist& d = dist();
  ncclUniqueId id{};
  if (d.is_root()) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  d.broadcast(&id, sizeof id, 0);
  check(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(ncclCommInitRank(&impl_->comm, d.world(), id, d.rank()), "ncclCommInitRank");
}

NcclGradientAllReduce::~NcclGradientAllReduce() {
  if (impl_->comm) ncclCommDestroy(impl_->comm);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

void NcclGradientAllReduce::mean(Tensor& grads) {
  if (grads.dtype() != DType::F32 || !grads.device().is_cuda() || !grads.is_contiguous())
    throw std::invalid_argument("NcclGradientAllReduce: gradients must be a contiguous fp32 CUDA buffer");
  void* p = grads.raw();
  check(ncclAllReduce(p, p, static_cast<size_t>(grads.numel()), ncclFloat, ncclAvg, impl_->comm, impl_->stream),
        "ncclAllReduce");
  check(cudaStreamSynchronize(impl_->stream), "cudaStreamSynchronize");
}

}  // namespace vt
