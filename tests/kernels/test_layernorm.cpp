// LayerNorm forward against a double-precision reference, backward against
// central finite differences of that reference (affine, weight-only and
// non-affine; overwrite, aliasing and accumulate variants).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

#include "gradcheck.h"
#include "kernels/kernel_test_util.h"
#include "kernels/layernorm.h"

namespace vt {
namespace {

using gradcheck::central_differences;
using kernel_test::expect_close;
using kernel_test::randn;
using kernel_test::to_double;

constexpr int64_t kRows = 6, kD = 37;
constexpr double kEps = 1e-6;

// y = (x - mean) / sqrt(var + eps) * w + b in double; empty w/b = absent.
std::vector<double> ref_ln(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                           std::vector<double>* mean = nullptr, std::vector<double>* rstd = nullptr) {
  std::vector<double> y(x.size());
  for (int64_t r = 0; r < kRows; ++r) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < kD; ++j) mu += x[r * kD + j];
    mu /= kD;
    for (int64_t j = 0; j < kD; ++j) var += (x[r * kD + j] - mu) * (x[r * kD + j] - mu);
    var /= kD;
    const double rs = 1.0 / std::sqrt(var + kEps);
    if (mean) mean->push_back(mu);
    if (rstd) rstd->push_back(rs);
    for (int64_t j = 0; j < kD; ++j)
      y[r * kD + j] = (x[r * kD + j] - mu) * rs * (w.empty() ? 1.0 : w[j]) + (b.empty() ? 0.0 : b[j]);
  }
  return y;
}

double ref_loss(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                const std::vector<double>& r) {
  std::vector<double> y = ref_ln(x, w, b);
  double l = 0;
  for (size_t i = 0; i < y.size(); ++i) l += r[i] * y[i];
  return l;
}

struct Case {
  bool weight, bias;
};

class LayerNormAffine : public ::testing::TestWithParam<Case> {};

TEST_P(LayerNormAffine, ForwardMatchesDoubleReference) {
  const Case cs = GetParam();
  // An offset mean (5) and small spread test the centred variance.
  Tensor x = randn({2, 3, kD}, 1, 0.5, 5.0);
  Tensor w = cs.weight ? randn({kD}, 2, 0.5, 1.0) : Tensor();
  Tensor b = cs.bias ? randn({kD}, 3) : Tensor();
  Tensor y = Tensor::zeros(x.shape()), mean = Tensor::zeros({kRows}), rstd = Tensor::zeros({kRows});
  layernorm_forward(x, w, b, kEps, y, mean, rstd);
  std::vector<double> mu, rs;
  std::vector<double> want = ref_ln(to_double(x), w.defined() ? to_double(w) : std::vector<double>{},
                                    b.defined() ? to_double(b) : std::vector<double>{}, &mu, &rs);
  expect_close(want, y, 2e-5, 2e-5, "y");
  expect_close(mu, mean, 1e-6, 1e-6, "mean");
  expect_close(rs, rstd, 1e-6, 1e-5, "rstd");
}

TEST_P(LayerNormAffine, BackwardMatchesFiniteDifferences) {
  const Case cs = GetParam();
  Tensor x = randn({kRows, kD}, 10, 1.5, 0.7);
  Tensor w = cs.weight ? randn({kD}, 11, 0.5, 1.0) : Tensor();
  Tensor b = cs.bias ? randn({kD}, 12) : Tensor();
  Tensor r = randn({kRows, kD}, 13);
  std::vector<double> xv = to_double(x), wv = w.defined() ? to_double(w) : std::vector<double>{},
                      bv = b.defined() ? to_double(b) : std::vector<double>{}, rv = to_double(r);
  Tensor y = Tensor::zeros(x.shape()), mean = Tensor::zeros({kRows}), rstd = Tensor::zeros({kRows});
  layernorm_forward(x, w, b, kEps, y, mean, rstd);

  Tensor dx = Tensor::full(x.shape(), 7.0f);
  Tensor dw = cs.weight ? randn({kD}, 14) : Tensor();
  Tensor db = cs.bias ? randn({kD}, 15) : Tensor();
  std::vector<double> dw0 = dw.defined() ? to_double(dw) : std::vector<double>{};
  std::vector<double> db0 = db.defined() ? to_double(db) : std::vector<double>{};
  layernorm_backward(r, x, w, mean, rstd, dx, dw, db);

  auto gx = central_differences(xv, [&](const std::vector<double>& p) { return ref_loss(p, wv, bv, rv); });
  expect_close(gx, dx, 1e-4, 1e-4, "dx");
  if (cs.weight) {
    auto gw = central_differences(wv, [&](const std::vector<double>& p) { return ref_loss(xv, p, bv, rv); });
    for (int64_t j = 0; j < kD; ++j) gw[j] += dw0[j];
    expect_close(gw, dw, 1e-4, 1e-4, "dweight");
  }
  if (cs.bias) {
    auto gb = central_differences(bv, [&](const std::vector<double>& p) { return ref_loss(xv, wv, p, rv); });
    for (int64_t j = 0; j < kD; ++j) gb[j] += db0[j];
    expect_close(gb, db, 1e-4, 1e-4, "dbias");
  }

  // dx aliasing dy gives the same dx (parameter gradients are taken first).
  Tensor dy_alias = r.clone();
  layernorm_backward(dy_alias, x, w, mean, rstd, dy_alias, Tensor(), Tensor());
  expect_close(to_double(dx), dy_alias, 1e-6, 1e-6, "dx aliasing dy");

  // The accumulate variant adds onto dx.
  Tensor acc = randn({kRows, kD}, 16);
  std::vector<double> want_acc = to_double(acc);
  for (size_t i = 0; i < want_acc.size(); ++i) want_acc[i] += gx[i];
  layernorm_backward_accumulate(r, x, w, mean, rstd, acc, Tensor(), Tensor());
  expect_close(want_acc, acc, 1e-4, 1e-4, "dx accumulated");
}

INSTANTIATE_TEST_SUITE_P(Variants, LayerNormAffine,
                         ::testing::Values(Case{true, true}, Case{true, false}, Case{false, false}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return std::string(i.param.weight ? "W" : "NoW") + (i.param.bias ? "B" : "NoB");
                         });

TEST(LayerNorm, LargeRowsAreDeterministicAcrossCalls) {
  // Many rows exercise the column-block reduction of dweight/dbias.
  Tensor x = randn({300, 70}, 20), r = randn({300, 70}, 21), w = randn({70}, 22), b = randn({70}, 23);
  Tensor y = Tensor::zeros(x.shape()), mean = Tensor::zeros({300}), rstd = Tensor::zeros({300});
  layernorm_forward(x, w, b, 1e-5f, y, mean, rstd);
  Tensor dw1 = Tensor::zeros({70}), db1 = Tensor::zeros({70}), dw2 = Tensor::zeros({70}), db2 = Tensor::zeros({70});
  layernorm_backward(r, x, w, mean, rstd, Tensor(), dw1, db1);
  layernorm_backward(r, x, w, mean, rstd, Tensor(), dw2, db2);
  EXPECT_EQ(dw1.to_vector(), dw2.to_vector());
  // dbias is the column sum of dy, computed here in double.
  std::vector<double> rv = to_double(r), want(70, 0.0);
  for (int i = 0; i < 300; ++i)
    for (int j = 0; j < 70; ++j) want[j] += rv[i * 70 + j];
  expect_close(want, db1, 1e-4, 1e-5, "dbias");
}

TEST(LayerNorm, BadArgumentsThrowNamingTensor) {
  Tensor x = randn({4, 8}, 1), y = Tensor::zeros({4, 8});
  try {
    layernorm_forward(x, randn({7}, 2), Tensor(), 1e-6f, y, Tensor(), Tensor());
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("layernorm_forward"), std::string::npos) << msg;
    EXPECT_NE(msg.find("weight"), std::string::npos) << msg;
  }
  EXPECT_THROW(layernorm_forward(x, Tensor(), Tensor(), 1e-6f, Tensor::zeros({4, 7}), Tensor(), Tensor()),
               std::invalid_argument);
  EXPECT_THROW(layernorm_backward(y, x, Tensor(), Tensor::zeros({3}), Tensor::zeros({4}), y, Tensor(), Tensor()),
               std::invalid_argument);
  EXPECT_THROW(layernorm_backward_accumulate(y, x, Tensor(), Tensor::zeros({4}), Tensor::zeros({4}), y, Tensor(),
                                             Tensor()),
               std::invalid_argument);
}

}  // namespace
}  // namespace vt
