// Elementwise helpers against naive double loops, aliasing, and shape errors.
#include <gtest/gtest.h>

#include <stdexcept>

#include "kernels/elementwise.h"
#include "kernels/kernel_test_util.h"

namespace vt {
namespace {

using kernel_test::expect_close;
using kernel_test::randn;
using kernel_test::to_double;

// 40000 elements take the threaded path; 7 the serial one.
class ElementwiseSizes : public ::testing::TestWithParam<int64_t> {};

TEST_P(ElementwiseSizes, OpsMatchNaive) {
  const int64_t n = GetParam();
  Tensor a = randn({n}, 1), b = randn({n}, 2), out = Tensor::zeros({n});
  std::vector<double> av = to_double(a), bv = to_double(b), want(n);

  add(a, b, out);
  for (int64_t i = 0; i < n; ++i) want[i] = av[i] + bv[i];
  expect_close(want, out, 1e-6, 1e-6, "add");

  axpby(0.5f, a, -2.0f, b, out);
  for (int64_t i = 0; i < n; ++i) want[i] = 0.5 * av[i] - 2.0 * bv[i];
  expect_close(want, out, 1e-6, 1e-6, "axpby");

  mul(a, b, out);
  for (int64_t i = 0; i < n; ++i) want[i] = av[i] * bv[i];
  expect_close(want, out, 1e-6, 1e-6, "mul");

  scale(a, 3.0f, out);
  for (int64_t i = 0; i < n; ++i) want[i] = 3.0 * av[i];
  expect_close(want, out, 1e-6, 1e-6, "scale");

  Tensor y = b.clone();
  axpy(-0.25f, a, y);
  for (int64_t i = 0; i < n; ++i) want[i] = bv[i] - 0.25 * av[i];
  expect_close(want, y, 1e-6, 1e-6, "axpy");

  double s = 0;
  for (double v : av) s += v;
  EXPECT_NEAR(sum(a), s, 1e-9 * n);

  // Outputs may alias inputs.
  Tensor c = a.clone();
  add(c, b, c);
  for (int64_t i = 0; i < n; ++i) want[i] = av[i] + bv[i];
  expect_close(want, c, 1e-6, 1e-6, "add in place");
}

INSTANTIATE_TEST_SUITE_P(Sizes, ElementwiseSizes, ::testing::Values(int64_t{7}, int64_t{40000}));

TEST(Elementwise, ShapeMismatchAndNonContiguousThrow) {
  Tensor a = randn({2, 3}, 1);
  try {
    add(a, randn({3, 2}, 2), Tensor::zeros({2, 3}));
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("add"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[3, 2]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(scale(a.transpose(0, 1), 2.0f, Tensor::zeros({3, 2})), std::invalid_argument);
  EXPECT_THROW(axpy(1.0f, a, Tensor()), std::invalid_argument);
}

}  // namespace
}  // namespace vt
