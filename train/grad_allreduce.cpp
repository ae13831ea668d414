#include "train/grad_allreduce.h"

#include <stdexcept>
#include <string>

#include "core/dist.h"
#include "core/dist_watchdog.h"
#ifdef VT_NCCL
#include "train/grad_allreduce_nccl.h"
#endif

namespace vt {

void GradientAllReduce::mean(Tensor& grads) {
  mean_range(grads, 0, grads.numel());
  finish();
}

void check_grad_range(const char* who, const Tensor& grads, int64_t offset, int64_t numel) {
  if (numel < 1 || offset < 0 || offset + numel > grads.numel())
    throw std::invalid_argument(std::string(who) + ": range [" + std::to_string(offset) + ", " +
                                std::to_string(offset + numel) + ") outside the " + std::to_string(grads.numel()) +
                                " gradients");
}

void MpiGradientAllReduce::mean_range(Tensor& grads, int64_t offset, int64_t numel) {
  if (grads.dtype() != DType::F32 || !grads.device().is_cpu() || !grads.is_contiguous())
    throw std::invalid_argument("MpiGradientAllReduce: gradients must be a contiguous fp32 CPU buffer");
  check_grad_range("MpiGradientAllReduce", grads, offset, numel);
  const Dist& d = dist();
  if (d.world() == 1) return;
  float* g = grads.f32() + offset;
  const size_t n = static_cast<size_t>(numel);
  CollectiveWatch w("MPI_Allreduce of the gradients", n, "floats");
  d.allreduce_sum(g, n);
  const float inv = 1.0f / static_cast<float>(d.world());
  for (size_t i = 0; i < n; ++i) g[i] *= inv;
}

std::unique_ptr<GradientAllReduce> make_gradient_allreduce(Device device) {
  if (dist().world() == 1) return nullptr;
  if (device.is_cpu()) return std::make_unique<MpiGradientAllReduce>();
#ifdef VT_NCCL
  return std::make_unique<NcclGradientAllReduce>();
#else
  throw std::runtime_error("gradients on " + device.str() + " across " + std::to_string(dist().world()) +
                           " processes need NCCL, and this build has none (VT_NCCL: NCCL from the CUDA toolkit)");
#endif
}

double mean_over_ranks(double value) {
  const Dist& d = dist();
  if (d.world() == 1) return value;
  CollectiveWatch w("MPI_Allreduce of the step's loss", 1, "doubles");
  d.allreduce_sum(&value, 1);
  return value / d.world();
}

}  // namespace vt
