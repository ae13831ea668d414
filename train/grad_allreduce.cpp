#include "train/grad_allreduce.h"

#include <stdexcept>
#include <string>

#include "core/dist.h"
#ifdef VT_NCCL
#include "train/grad_allreduce_nccl.h"
#endif

namespace vt {

void MpiGradientAllReduce::mean(Tensor& grads) {
  if (grads.dtype() != DType::F32 || !grads.device().is_cpu() || !grads.is_contiguous())
    throw std::invalid_argument("MpiGradientAllReduce: gradients must be a contiguous fp32 CPU buffer");
  const Dist& d = dist();
  if (d.world() == 1) return;
  float* g = grads.f32();
  const size_t n = static_cast<size_t>(grads.numel());
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
  d.allreduce_sum(&value, 1);
  return value / d.world();
}

}  // namespace vt
