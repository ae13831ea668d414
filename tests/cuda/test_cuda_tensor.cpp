// Tensor copies with CUDA views of any strides against the same copies on
// CPU tensors (the reference: cpu_strided_copy, element by element).
// Regression: a non-contiguous CUDA source recursed forever in copy_from
// (copy_from -> contiguous -> clone -> copy_from), as vit.cpp's class-token
// copy did.
#include <gtest/gtest.h>

#include "cuda_test_util.h"

namespace vt {
namespace {

using namespace cudatest;

Tensor iota(const Shape& s) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) + 0.5f;
  return Tensor::from_vector(v, s);
}

TEST(CudaTensor, StridedSourceToEveryDestination) {
  VT_SKIP_WITHOUT_GPU();
  const Tensor host = iota({3, 5, 4});
  const Tensor gpu = host.to(Device::cuda(0));
  // A column slice, a transpose and a class-token style select.
  const std::vector<std::pair<Tensor, Tensor>> views = {
      {host.slice(2, 1, 3), gpu.slice(2, 1, 3)},
      {host.transpose(0, 2), gpu.transpose(0, 2)},
      {host.select(1, 0), gpu.select(1, 0)},
  };
  for (const auto& [hv, gv] : views) {
    ASSERT_FALSE(gv.is_contiguous());
    const std::vector<float> want = hv.to_vector();
    EXPECT_EQ(gv.to(Device::cpu()).to_vector(), want) << hv.str();  // CUDA strided -> CPU
    EXPECT_EQ(gv.contiguous().to_vector(), want) << hv.str();       // CUDA strided -> CUDA packed
    Tensor dst = Tensor::zeros(hv.shape(), DType::F32, Device::cuda(0));
    dst.copy_from(gv);
    EXPECT_EQ(dst.to_vector(), want) << hv.str();
  }
}

TEST(CudaTensor, StridedDestinationKeepsTheRest) {
  VT_SKIP_WITHOUT_GPU();
  Tensor host = iota({4, 6});
  Tensor gpu = host.to(Device::cuda(0));
  const Tensor src = Tensor::full({4, 2}, -1.0f);
  host.slice(1, 2, 4).copy_from(src);
  gpu.slice(1, 2, 4).copy_from(src);                                   // CPU -> CUDA strided
  EXPECT_EQ(gpu.to_vector(), host.to_vector());
  host.slice(1, 0, 2).copy_from(host.slice(1, 4, 6).contiguous());
  gpu.slice(1, 0, 2).copy_from(gpu.slice(1, 4, 6));                    // CUDA strided -> CUDA strided
  EXPECT_EQ(gpu.to_vector(), host.to_vector());
  Tensor bf = gpu.to(Device::cpu()).to(DType::BF16).to(Device::cuda(0));
  EXPECT_EQ(bf.transpose(0, 1).to_vector(), host.to(DType::BF16).transpose(0, 1).to_vector());
}

}  // namespace
}  // namespace vt
