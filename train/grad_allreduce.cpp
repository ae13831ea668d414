#include "train/grad_allreduce.h"

#include <stdexcept>

#include "core/dist.h"

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

std::unique_ptr<GradientAllReduce> make_gradient_allreduce() {
  if (dist().world() == 1) return nullptr;
  return std::make_unique<MpiGradientAllReduce>();
}

double mean_over_ranks(double value) {
  const Dist& d = dist();
  if (d.world() == 1) return value;
  d.allreduce_sum(&value, 1);
  return value / d.world();
}

}  // namespace vt
