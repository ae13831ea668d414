// The VAE's CUDA GroupNorm (fused SiLU) and nearest 2x upsampling against
// their CPU twins through the public ops (kernels/groupnorm.h,
// kernels/upsample.h): GroupNorm within 1e-5 of the CPU's output scale,
// upsampling bit for bit; odd shapes, rows longer than one statistics chunk,
// y aliasing x, and the errors.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/cuda/groupnorm.h"
#include "kernels/groupnorm.h"
#include "kernels/upsample.h"
#include "test_fs.h"

namespace vt {
namespace {

using namespace cudatest;
using vt_test::error_of;

const Device kGpu = Device::cuda(0);

struct GnCase {
  Shape shape;
  int64_t groups;
  bool affine, silu;
};

void run_case(const GnCase& c, uint64_t seed) {
  SCOPED_TRACE(shape_str(c.shape) + " groups=" + std::to_string(c.groups) + (c.affine ? " affine" : "") +
               (c.silu ? " silu" : ""));
  const int64_t ch = c.shape[1];
  // Offset mean: the two-pass variance must survive |mean| >> std.
  Tensor x = Tensor::from_vector(randn(static_cast<size_t>(Tensor::empty(c.shape).numel()), seed, 2.0, 3.0), c.shape);
  Tensor w = c.affine ? Tensor::from_vector(randn(ch, seed + 1, 0.5, 1.0), {ch}) : Tensor();
  Tensor b = c.affine ? Tensor::from_vector(randn(ch, seed + 2, 0.5), {ch}) : Tensor();
  const float eps = 1e-6f;
  Tensor want = Tensor::empty(c.shape);
  groupnorm_forward(x, c.groups, w, b, eps, want, c.silu);

  Tensor gx = x.to(kGpu), gw = c.affine ? w.to(kGpu) : Tensor(), gb = c.affine ? b.to(kGpu) : Tensor();
  Tensor gy = Tensor::full(c.shape, 7.f).to(kGpu);
  groupnorm_forward(gx, c.groups, gw, gb, eps, gy, c.silu);
  expect_close(to_host(gy.to(Device::cpu())), want.to_vector(), 1e-5, "y");
  // In place (y aliases x), as the VAE's norm2 and conv_norm_out run.
  groupnorm_forward(gx, c.groups, gw, gb, eps, gx, c.silu);
  expect_close(to_host(gx.to(Device::cpu())), want.to_vector(), 1e-5, "y aliasing x");
}

TEST(CudaGroupNorm, MatchesCpu) {
  VT_SKIP_WITHOUT_GPU();
  const GnCase cases[] = {
      {{2, 8, 5, 7}, 4, true, true},       // odd spatial
      {{2, 8, 5, 7}, 4, true, false},
      {{1, 6, 1, 1}, 3, false, false},     // two channels per row, one pixel each
      {{3, 5, 3}, 5, true, true},          // 3-d [N, C, L], one channel per group
      {{1, 4, 1}, 1, false, true},         // one group over everything
      {{2, 64, 9, 11}, 32, true, true},    // the VAE's 32 groups
      {{1, 8, 37, 41}, 2, true, true},     // rows of 6068: two chunks, the second partial
      {{1, 4, 64, 64}, 1, true, false},    // rows of 16384: exactly four chunks
  };
  // The last two cases' rows span several statistics chunks, one partial.
  ASSERT_GT(4 * 37 * 41, cuda::kGroupNormChunk);
  ASSERT_NE(4 * 37 * 41 % cuda::kGroupNormChunk, 0);
  ASSERT_GT(4 * 64 * 64, 2 * cuda::kGroupNormChunk);
  uint64_t seed = 10;
  for (const GnCase& c : cases) run_case(c, seed += 10);
}

TEST(CudaGroupNorm, LongRowsMatchDoubleStatistics) {
  VT_SKIP_WITHOUT_GPU();
  // A closed-form check independent of the CPU twin: x = 1000 + k (mod 7),
  // mean and variance of one full period known exactly; the rows span
  // several chunks, so the chunked float sums must not lose the offset.
  const int64_t c = 2, s = 7 * 1500;  // rows of 2 * 10500 = 21000 elements, 6 chunks
  std::vector<float> v(static_cast<size_t>(c * s));
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1000.f + static_cast<float>(i % 7);
  Tensor gx = Tensor::from_vector(v, {1, c, s}).to(kGpu);
  Tensor gy = Tensor::empty({1, c, s}, DType::F32, kGpu);
  groupnorm_forward(gx, 1, Tensor(), Tensor(), 0.f, gy);
  // mean 1003, population variance of 0..6 is 4.
  const std::vector<float> y = to_host(gy.to(Device::cpu()));
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_NEAR(y[i], (static_cast<double>(i % 7) - 3.0) / 2.0, 2e-5) << "at " << i;
}

TEST(CudaGroupNorm, Errors) {
  VT_SKIP_WITHOUT_GPU();
  Tensor gx = Tensor::zeros({2, 6, 3, 3}, DType::F32, kGpu), gy = Tensor::zeros({2, 6, 3, 3}, DType::F32, kGpu);
  std::string m = error_of([&] { groupnorm_forward(gx, 4, Tensor(), Tensor(), 1e-6f, gy); });
  EXPECT_NE(m.find("num_groups 4"), std::string::npos) << m;
  EXPECT_NE(m.find("C = 6"), std::string::npos) << m;
  // Parameters on another device than x.
  m = error_of([&] { groupnorm_forward(gx, 3, Tensor::zeros({6}), Tensor(), 1e-6f, gy); });
  EXPECT_NE(m.find("groupnorm_forward"), std::string::npos) << m;
  EXPECT_NE(m.find("weight"), std::string::npos) << m;
  m = error_of([&] { groupnorm_forward(gx, 3, Tensor(), Tensor(), 1e-6f, Tensor::zeros({2, 6, 3, 3})); });
  EXPECT_NE(m.find("y"), std::string::npos) << m;
  m = error_of([&] {
    groupnorm_forward(Tensor::zeros({2, 6, 3, 3}, DType::BF16, kGpu), 3, Tensor(), Tensor(), 1e-6f, gy);
  });
  EXPECT_NE(m.find("BF16"), std::string::npos) << m;
}

TEST(CudaUpsample, MatchesCpuExactly) {
  VT_SKIP_WITHOUT_GPU();
  const Shape shapes[] = {{1, 1, 1, 1}, {2, 3, 5, 7}, {1, 4, 8, 1}, {3, 2, 1, 9}, {1, 16, 32, 32}};
  uint64_t seed = 200;
  for (const Shape& s : shapes) {
    SCOPED_TRACE(shape_str(s));
    const Tensor x = randn_tensor(s, ++seed);
    const Shape os = {s[0], s[1], 2 * s[2], 2 * s[3]};
    Tensor want = Tensor::empty(os);
    upsample_nearest2x(x, want);
    Tensor gy = Tensor::full(os, 7.f).to(kGpu);
    upsample_nearest2x(x.to(kGpu), gy);
    EXPECT_EQ(to_host(gy.to(Device::cpu())), want.to_vector());
    // And the definition itself, y[i][j] = x[i / 2][j / 2], at the last element of each plane.
    const std::vector<float> xv = x.to_vector(), yv = want.to_vector();
    for (int64_t p = 0; p < s[0] * s[1]; ++p)
      EXPECT_EQ(yv[static_cast<size_t>((p + 1) * os[2] * os[3] - 1)],
                xv[static_cast<size_t>((p + 1) * s[2] * s[3] - 1)]);
  }
}

TEST(CudaUpsample, Errors) {
  VT_SKIP_WITHOUT_GPU();
  Tensor gx = Tensor::zeros({1, 2, 3, 4}, DType::F32, kGpu);
  std::string m = error_of([&] { upsample_nearest2x(gx, Tensor::zeros({1, 2, 6, 7}, DType::F32, kGpu)); });
  EXPECT_NE(m.find("upsample_nearest2x"), std::string::npos) << m;
  EXPECT_NE(m.find("[1, 2, 6, 8]"), std::string::npos) << m;
  m = error_of([&] { upsample_nearest2x(gx, Tensor::zeros({1, 2, 6, 8})); });
  EXPECT_NE(m.find("y"), std::string::npos) << m;
  // x a view of y's first elements: the output would overwrite its input.
  Tensor big = Tensor::zeros({1, 2, 6, 8}, DType::F32, kGpu);
  m = error_of([&] { upsample_nearest2x(big.view({96}).slice(0, 0, 24).view({1, 2, 3, 4}), big); });
  EXPECT_NE(m.find("alias"), std::string::npos) << m;
}

}  // namespace
}  // namespace vt
