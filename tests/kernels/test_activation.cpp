// GELU (erf, tanh) and SiLU against double-precision formulas written here
// from their definitions, and their derivatives against central finite
// differences of those formulas.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "kernels/activation.h"
#include "gradcheck.h"
#include "kernels/kernel_test_util.h"

namespace vt {
namespace {

using kernel_test::expect_close;

double ref(Activation a, double x) {
  switch (a) {
    case Activation::GeluErf: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case Activation::GeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
    case Activation::SiLU: return x / (1.0 + std::exp(-x));
  }
  return 0;
}

// Inputs spanning the saturated tails and the curved middle.
Tensor test_inputs() {
  Tensor x = kernel_test::randn({3, 41}, 7, 2.0);
  float* p = x.f32();
  const float fixed[] = {-12.0f, -6.0f, -3.0f, -1.0f, -1e-3f, 0.0f, 1e-3f, 0.5f, 1.0f, 3.0f, 6.0f, 12.0f};
  for (int i = 0; i < 12; ++i) p[i] = fixed[i];
  return x;
}

class ActivationKinds : public ::testing::TestWithParam<Activation> {};

TEST_P(ActivationKinds, ForwardMatchesDefinition) {
  const Activation a = GetParam();
  Tensor x = test_inputs(), y = Tensor::zeros(x.shape());
  activation_forward(a, x, y);
  std::vector<double> want;
  for (double v : kernel_test::to_double(x)) want.push_back(ref(a, v));
  expect_close(want, y, 1e-6, 1e-5, activation_name(a));
  // In place gives the same.
  Tensor z = x.clone();
  activation_forward(a, z, z);
  expect_close(kernel_test::to_double(y), z, 0, 0, "in place");
}

TEST_P(ActivationKinds, BackwardMatchesFiniteDifferences) {
  const Activation a = GetParam();
  Tensor x = test_inputs(), dy = kernel_test::randn(x.shape(), 8), dx = Tensor::full(x.shape(), 5.0f);
  activation_backward(a, dy, x, dx);
  std::vector<double> xv = kernel_test::to_double(x), dyv = kernel_test::to_double(dy), want(xv.size());
  const double h = 1e-5;
  for (size_t i = 0; i < xv.size(); ++i)
    want[i] = dyv[i] * gradcheck::central_differences({xv[i]}, [&](const std::vector<double>& v) { return ref(a, v[0]); }, h)[0];
  expect_close(want, dx, 1e-5, 1e-4, activation_name(a));
  Tensor alias = dy.clone();
  activation_backward(a, alias, x, alias);
  expect_close(kernel_test::to_double(dx), alias, 0, 0, "dx aliasing dy");
}

TEST_P(ActivationKinds, LargeTensorUsesThreadsWithSameResult) {
  const Activation a = GetParam();
  Tensor x = kernel_test::randn({40000}, 9, 3.0), y = Tensor::zeros({40000});
  activation_forward(a, x, y);
  std::vector<double> xv = kernel_test::to_double(x), want(xv.size());
  for (size_t i = 0; i < xv.size(); ++i) want[i] = ref(a, xv[i]);
  expect_close(want, y, 1e-6, 1e-5, "large");
}

// A diverged step's NaN stays NaN through the activations (the non-finite
// guard reads it in the loss). Under UBSan this also checks the exp's
// exponent arithmetic on NaN (it shifted a negative value).
TEST_P(ActivationKinds, NanInputsGiveNan) {
  const Activation a = GetParam();
  Tensor x = Tensor::full({5}, std::nanf("")), y = Tensor::zeros({5}), dx = Tensor::zeros({5});
  activation_forward(a, x, y);
  activation_backward(a, Tensor::full({5}, 1.0f), x, dx);
  for (int i = 0; i < 5; ++i) {
    EXPECT_TRUE(std::isnan(y.f32()[i])) << activation_name(a) << " forward " << y.f32()[i];
    EXPECT_TRUE(std::isnan(dx.f32()[i])) << activation_name(a) << " backward " << dx.f32()[i];
  }
}

INSTANTIATE_TEST_SUITE_P(All, ActivationKinds,
                         ::testing::Values(Activation::GeluErf, Activation::GeluTanh, Activation::SiLU),
                         [](const ::testing::TestParamInfo<Activation>& i) {
                           return std::string(activation_name(i.param));
                         });

TEST(Activation, NamesRoundTripAndBadInputThrows) {
  for (Activation a : {Activation::GeluErf, Activation::GeluTanh, Activation::SiLU})
    EXPECT_EQ(activation_from_name(activation_name(a)), a);
  EXPECT_THROW(activation_from_name("relu"), std::invalid_argument);
  EXPECT_THROW(activation_forward(Activation::SiLU, Tensor::zeros({3}), Tensor::zeros({4})), std::invalid_argument);
  EXPECT_THROW(activation_backward(Activation::SiLU, Tensor::zeros({3}), Tensor::zeros({3}), Tensor()),
               std::invalid_argument);
}

}  // namespace
}  // namespace vt
