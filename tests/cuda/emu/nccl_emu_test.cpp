// The NCCL gradient all-reduce (train/grad_allreduce_nccl.h) on emulated
// CUDA buffers, NCCL forwarded to MPI (nccl_emu.cpp); run by ctest under
// `mpirun -np 2` and `-np 3` (emu.nccl_allreduce_np2/np3, label emu).
// Every rank's buffer is drawn from Philox keyed by the rank, so each rank
// can also draw all the others' and compute the expected mean itself, in
// double: the oracle does not use MPI or NCCL. The CPU path
// (MpiGradientAllReduce) must give bitwise the same result, as the two
// trainers' paths must agree in an emulated run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/dist.h"
#include "core/philox.h"
#include "core/tensor.h"
#include "dp_emu_util.h"
#include "train/grad_allreduce.h"
#include "train/grad_allreduce_nccl.h"

namespace vt {
namespace {

// Rank r's gradients: normals of varying scale, so the sum rounds.
std::vector<float> rank_values(int rank, int64_t n) {
  Philox g(77, static_cast<uint64_t>(rank) + 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<float>(g.normal() * std::exp(4.0 * g.uniform_double() - 2.0));
  return v;
}

Tensor host_tensor(const std::vector<float>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())});
  std::copy(v.begin(), v.end(), t.f32());
  return t;
}

TEST(NcclEmu, AllReduceMatchesIndependentMeanAndMpi) {
  const Dist& d = dist();
  ASSERT_GE(d.world(), 2) << "run under mpirun -np 2 or more";
  NcclGradientAllReduce nccl;
  MpiGradientAllReduce mpi;
  for (int64_t n : {int64_t(1), int64_t(7), int64_t(1000003)}) {
    const std::vector<float> mine = rank_values(d.rank(), n);
    Tensor dev = host_tensor(mine).to(Device::cuda(0));
    nccl.mean(dev);
    const Tensor got = dev.to(Device::cpu());
    Tensor cpu = host_tensor(mine);
    mpi.mean(cpu);
    // The exact mean (double) and the mean magnitude, which bounds the
    // float rounding of a sum with cancellation: a few ulps of it.
    std::vector<double> expect(static_cast<size_t>(n), 0.0), mag(static_cast<size_t>(n), 0.0);
    for (int r = 0; r < d.world(); ++r) {
      const std::vector<float> v = rank_values(r, n);
      for (int64_t i = 0; i < n; ++i) expect[i] += v[i], mag[i] += std::fabs(v[i]);
    }
    int64_t far = 0, differ = 0;
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double e = expect[i] / d.world(), g = got.f32()[i];
      const double err = std::fabs(g - e) / (mag[i] / d.world());
      worst = std::max(worst, err);
      far += err > 1e-6;
      differ += got.f32()[i] != cpu.f32()[i];
    }
    EXPECT_EQ(far, 0) << "n " << n << ", worst error relative to the mean magnitude " << worst;
    EXPECT_EQ(differ, 0) << "n " << n << ": the NCCL path differs from MpiGradientAllReduce";
  }
}

TEST(NcclEmu, LoopPicksNcclForCudaGradients) {
  EXPECT_NE(dynamic_cast<NcclGradientAllReduce*>(make_gradient_allreduce(Device::cuda(0)).get()), nullptr);
  EXPECT_NE(dynamic_cast<MpiGradientAllReduce*>(make_gradient_allreduce(Device::cpu()).get()), nullptr);
}

TEST(NcclEmu, RefusesHostAndNonFp32Buffers) {
  NcclGradientAllReduce nccl;
  Tensor host = Tensor::full({4}, 1.0f);
  EXPECT_THROW(nccl.mean(host), std::invalid_argument);
  Tensor ints = Tensor::empty({4}, DType::I32, Device::cuda(0));
  EXPECT_THROW(nccl.mean(ints), std::invalid_argument);
  Tensor dev = Tensor::full({4}, 1.0f, Device::cuda(0));
  EXPECT_THROW(nccl.mean_range(dev, 2, 3), std::invalid_argument);  // [2, 5) outside 4 values
  EXPECT_THROW(nccl.mean_range(dev, 0, 0), std::invalid_argument);
}

// One bucket: only its range becomes the mean; the rest stays this rank's.
TEST(NcclEmu, MeanRangeReducesOnlyItsRange) {
  const Dist& d = dist();
  NcclGradientAllReduce nccl;
  const std::vector<float> mine = rank_values(d.rank(), 11);
  Tensor dev = host_tensor(mine).to(Device::cuda(0));
  nccl.mean_range(dev, 3, 5);
  nccl.finish();
  const Tensor got = dev.to(Device::cpu());
  for (int64_t i = 0; i < 11; ++i) {
    if (i < 3 || i >= 8) {
      EXPECT_EQ(got.f32()[i], mine[static_cast<size_t>(i)]) << i;
      continue;
    }
    double mean = 0, mag = 0;
    for (int r = 0; r < d.world(); ++r) mean += rank_values(r, 11)[i], mag += std::fabs(rank_values(r, 11)[i]);
    EXPECT_LE(std::fabs(got.f32()[i] - mean / d.world()), 1e-6 * mag / d.world()) << i;
  }
}

}  // namespace
}  // namespace vt

int main(int argc, char** argv) { return vt_test::run_tests_on_every_rank(argc, argv); }
