// Softmax cross-entropy (hard labels, label smoothing, soft targets): the
// loss against a double log-softmax written here, dlogits against central
// finite differences of that loss, plus closed forms and stability.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "kernels/cross_entropy.h"
#include "gradcheck.h"
#include "kernels/kernel_test_util.h"

namespace vt {
namespace {

using gradcheck::central_differences;
using kernel_test::expect_close;
using kernel_test::randn;
using kernel_test::to_double;

constexpr int64_t kB = 5, kK = 7;

std::vector<double> log_softmax_row(const double* l, int64_t k) {
  double mx = l[0];
  for (int64_t c = 1; c < k; ++c) mx = std::max(mx, l[c]);
  double s = 0;
  for (int64_t c = 0; c < k; ++c) s += std::exp(l[c] - mx);
  std::vector<double> out(k);
  for (int64_t c = 0; c < k; ++c) out[c] = l[c] - mx - std::log(s);
  return out;
}

// Mean over rows of sum_c -q_bc log p_bc for the target distribution q.
double ref_loss(const std::vector<double>& logits, const std::vector<double>& q) {
  double total = 0;
  for (int64_t r = 0; r < kB; ++r) {
    std::vector<double> lp = log_softmax_row(&logits[r * kK], kK);
    for (int64_t c = 0; c < kK; ++c) total -= q[r * kK + c] * lp[c];
  }
  return total / kB;
}

std::vector<double> smoothed_targets(const std::vector<int32_t>& y, double s) {
  std::vector<double> q(kB * kK, s / kK);
  for (int64_t r = 0; r < kB; ++r) q[r * kK + y[r]] += 1 - s;
  return q;
}

class HardLabels : public ::testing::TestWithParam<float> {};

TEST_P(HardLabels, LossAndGradientMatchReference) {
  const float s = GetParam();
  Tensor logits = randn({kB, kK}, 1, 2.0);
  const std::vector<int32_t> y = {0, 6, 3, 3, 1};
  Tensor labels = Tensor::empty({kB}, DType::I32);
  for (int64_t r = 0; r < kB; ++r) labels.i32()[r] = y[r];
  Tensor dl = Tensor::zeros({kB, kK}), pred = Tensor::empty({kB}, DType::I32);
  const float grad_scale = 0.5f;
  CrossEntropyResult res = cross_entropy_forward_backward(logits, labels, s, dl, grad_scale, pred);

  std::vector<double> lv = to_double(logits), q = smoothed_targets(y, s);
  EXPECT_NEAR(res.loss, ref_loss(lv, q), 1e-6);
  // Definition of the smoothed loss, term by term: (1-s)(-logp_y) + s mean_c(-logp_c).
  double alt = 0;
  for (int64_t r = 0; r < kB; ++r) {
    std::vector<double> lp = log_softmax_row(&lv[r * kK], kK);
    double mean_nll = 0;
    for (double v : lp) mean_nll -= v / kK;
    alt += (1 - s) * -lp[y[r]] + s * mean_nll;
  }
  EXPECT_NEAR(res.loss, alt / kB, 1e-6);

  std::vector<double> g = central_differences(lv, [&](const std::vector<double>& p) { return ref_loss(p, q); });
  for (double& v : g) v *= grad_scale;
  expect_close(g, dl, 1e-6, 1e-5, "dlogits");

  int64_t correct = 0;
  for (int64_t r = 0; r < kB; ++r) {
    int64_t am = 0;
    for (int64_t c = 1; c < kK; ++c)
      if (lv[r * kK + c] > lv[r * kK + am]) am = c;
    EXPECT_EQ(pred.i32()[r], am);
    correct += am == y[r];
  }
  EXPECT_EQ(res.correct, correct);
}

INSTANTIATE_TEST_SUITE_P(Smoothing, HardLabels, ::testing::Values(0.0f, 0.1f, 1.0f));

TEST(CrossEntropy, UniformLogitsGiveLogK) {
  Tensor logits = Tensor::full({3, 10}, 2.5f), labels = Tensor::zeros({3}, DType::I32), dl = Tensor::zeros({3, 10});
  CrossEntropyResult res = cross_entropy_forward_backward(logits, labels, 0.1f, dl);
  EXPECT_NEAR(res.loss, std::log(10.0), 1e-6);
  // p = 1/10 everywhere: dlogits = (0.1 - q) / 3.
  EXPECT_NEAR(dl.f32()[0], (0.1 - (0.9 + 0.01)) / 3, 1e-7);
  EXPECT_NEAR(dl.f32()[1], (0.1 - 0.01) / 3, 1e-7);
}

TEST(CrossEntropy, LargeLogitsStayFiniteAndShiftInvariant) {
  Tensor logits = randn({kB, kK}, 2), shifted = logits.clone();
  for (int64_t i = 0; i < shifted.numel(); ++i) shifted.f32()[i] += 1000.0f;
  Tensor labels = Tensor::zeros({kB}, DType::I32), d1 = Tensor::zeros({kB, kK}), d2 = Tensor::zeros({kB, kK});
  const double l1 = cross_entropy_forward_backward(logits, labels, 0.0f, d1).loss;
  const double l2 = cross_entropy_forward_backward(shifted, labels, 0.0f, d2).loss;
  ASSERT_TRUE(std::isfinite(l2));
  // Float rounding of x + 1000 perturbs logits by up to 3e-5.
  EXPECT_NEAR(l1, l2, 1e-4);
  expect_close(to_double(d1), d2, 2e-5, 1e-3, "dlogits shifted");
}

TEST(SoftCrossEntropy, LossAndGradientMatchReferenceAndAliasing) {
  Tensor logits = randn({kB, kK}, 3, 1.5);
  // Unnormalised rows too: the gradient must be p * sum(t) - t.
  Tensor t = Tensor::empty({kB, kK});
  Philox rng(99, 1);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(rng.uniform_double());
  Tensor dl = Tensor::zeros({kB, kK});
  CrossEntropyResult res = soft_cross_entropy_forward_backward(logits, t, dl, 1.0f);
  std::vector<double> lv = to_double(logits), tv = to_double(t);
  EXPECT_NEAR(res.loss, ref_loss(lv, tv), 1e-5);
  expect_close(central_differences(lv, [&](const std::vector<double>& p) { return ref_loss(p, tv); }), dl, 1e-6,
               1e-5, "dlogits");
  int64_t correct = 0;
  for (int64_t r = 0; r < kB; ++r) {
    int64_t al = 0, at = 0;
    for (int64_t c = 1; c < kK; ++c) {
      if (lv[r * kK + c] > lv[r * kK + al]) al = c;
      if (tv[r * kK + c] > tv[r * kK + at]) at = c;
    }
    correct += al == at;
  }
  EXPECT_EQ(res.correct, correct);
  // dlogits may overwrite logits.
  Tensor inplace = logits.clone();
  soft_cross_entropy_forward_backward(inplace, t, inplace, 1.0f);
  expect_close(to_double(dl), inplace, 1e-7, 1e-6, "in place");
}

TEST(CrossEntropy, BadInputsThrow) {
  Tensor logits = randn({2, 3}, 4), labels = Tensor::zeros({2}, DType::I32);
  labels.i32()[1] = 3;
  try {
    cross_entropy_forward_backward(logits, labels, 0.0f, Tensor());
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("labels[1] = 3"), std::string::npos) << e.what();
  }
  labels.i32()[1] = 0;
  EXPECT_THROW(cross_entropy_forward_backward(logits, labels, 1.5f, Tensor()), std::invalid_argument);
  EXPECT_THROW(cross_entropy_forward_backward(logits, Tensor::zeros({2}), 0.0f, Tensor()), std::invalid_argument);
  EXPECT_THROW(soft_cross_entropy_forward_backward(logits, Tensor::zeros({2, 4}), Tensor()), std::invalid_argument);
}

}  // namespace
}  // namespace vt
