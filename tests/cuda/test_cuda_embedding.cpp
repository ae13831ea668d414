// Label embedding, timestep embedding and the 2D sin-cos table on CUDA
// against the CPU ops on the same inputs.
#include <gtest/gtest.h>

#include <stdexcept>

#include "cuda_test_util.h"
#include "kernels/embedding.h"

namespace vt {
namespace {

using namespace cudatest;

TEST(CudaEmbedding, LookupAndGradientWithDuplicateIdsMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t V = 11, D = 300, B = 6;  // D > one 128-thread block
  Tensor table = Tensor::from_vector(randn(V * D, 1), {V, D});
  Tensor ids = Tensor::empty({B}, DType::I32);
  const int32_t idv[B] = {3, 10, 3, 0, 3, 7};  // duplicates: summed in batch order
  for (int64_t b = 0; b < B; ++b) ids.i32()[b] = idv[b];
  Tensor out = Tensor::empty({B, D}), gout = Tensor::zeros({B, D}, DType::F32, Device::cuda(0));
  embedding_forward(table, ids, out);
  embedding_forward(table.to(Device::cuda(0)), ids.to(Device::cuda(0)), gout);
  EXPECT_EQ(gout.to_vector(), out.to_vector());
  Tensor dout = Tensor::from_vector(randn(B * D, 2), {B, D});
  Tensor dtable = Tensor::from_vector(randn(V * D, 3), {V, D}), gdtable = dtable.to(Device::cuda(0));
  embedding_backward(dout, ids, dtable);
  embedding_backward(dout.to(Device::cuda(0)), ids.to(Device::cuda(0)), gdtable);
  EXPECT_EQ(gdtable.to_vector(), dtable.to_vector());  // same order of fp32 adds
  ids.i32()[2] = static_cast<int32_t>(V);
  EXPECT_THROW(embedding_forward(table.to(Device::cuda(0)), ids.to(Device::cuda(0)), gout), std::out_of_range);
}

TEST(CudaEmbedding, TimestepAndSinCosTablesMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  for (int64_t dim : {256, 33}) {  // odd dim: a zero last column
    Tensor t = Tensor::from_vector({0.0f, 1.0f, 17.5f, 999.0f}, {4});
    Tensor out = Tensor::empty({4, dim}), gout = Tensor::full({4, dim}, 5.0f, Device::cuda(0));
    timestep_embedding(t, out);
    timestep_embedding(t.to(Device::cuda(0)), gout);
    expect_close(gout.to_vector(), out.to_vector(), 1e-6, "timestep_embedding");
  }
  Tensor pos = Tensor::empty({1, 12, 16}), gpos = Tensor::zeros({1, 12, 16}, DType::F32, Device::cuda(0));
  sincos_pos_embed_2d(3, 4, pos);
  sincos_pos_embed_2d(3, 4, gpos);
  EXPECT_EQ(gpos.to_vector(), pos.to_vector());
}

}  // namespace
}  // namespace vt
