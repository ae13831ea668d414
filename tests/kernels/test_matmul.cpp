// matmul / strided batched GEMM / Linear / bias gradient against naive
// double-precision loops, and Linear's backward against central finite
// differences of a double-precision forward; the MLP pair linear_act_forward
// / act_linear_backward likewise (GELU erf and tanh).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "kernels/matmul.h"
#include "gradcheck.h"
#include "kernels/kernel_test_util.h"

namespace vt {
namespace {

using gradcheck::central_differences;
using kernel_test::expect_close;
using kernel_test::randn;
using kernel_test::to_double;

// Element (i, j) of op(X) for a row-major stored matrix with row stride ld.
double at(const std::vector<double>& x, int64_t ld, bool trans, int64_t i, int64_t j) {
  return trans ? x[j * ld + i] : x[i * ld + j];
}

std::vector<double> naive_gemm(const std::vector<double>& a, int64_t lda, bool ta, const std::vector<double>& b,
                               int64_t ldb, bool tb, std::vector<double> c, int64_t ldc, int64_t m, int64_t n,
                               int64_t k, double alpha, double beta) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
      c[i * ldc + j] = alpha * s + beta * c[i * ldc + j];
    }
  return c;
}

class MatmulTrans : public ::testing::TestWithParam<std::tuple<bool, bool>> {};

TEST_P(MatmulTrans, OddSizesAlphaBetaBias) {
  const auto [ta, tb] = GetParam();
  const int64_t m = 7, n = 13, k = 5;
  Tensor a = ta ? randn({k, m}, 1) : randn({m, k}, 1);
  Tensor b = tb ? randn({n, k}, 2) : randn({k, n}, 2);
  Tensor c = randn({m, n}, 3);
  Tensor bias = randn({n}, 4);
  std::vector<double> want = naive_gemm(to_double(a), ta ? m : k, ta, to_double(b), tb ? k : n, tb, to_double(c), n,
                                        m, n, k, 0.75, 0.5);
  std::vector<double> bv = to_double(bias);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) want[i * n + j] += bv[j];
  matmul(a, ta, b, tb, c, 0.75f, 0.5f, bias);
  expect_close(want, c, 1e-5, 1e-5, "c");
}

INSTANTIATE_TEST_SUITE_P(AllTransposes, MatmulTrans,
                         ::testing::Combine(::testing::Bool(), ::testing::Bool()));

TEST(Matmul, BetaZeroIgnoresNaNInOutput) {
  Tensor a = randn({4, 3}, 5), b = randn({3, 6}, 6);
  Tensor c = Tensor::full({4, 6}, std::numeric_limits<float>::quiet_NaN());
  matmul(a, false, b, false, c);
  expect_close(naive_gemm(to_double(a), 3, false, to_double(b), 6, false, std::vector<double>(24, 0.0), 6, 4, 6, 3,
                          1.0, 0.0),
               c, 1e-5, 1e-5, "c");
}

TEST(Matmul, LeadingDimsFlattenAndColumnSliceViews) {
  // a [2, 3, 5] is 6 rows; b is a column slice of a wider matrix (row stride 9).
  Tensor a = randn({2, 3, 5}, 7);
  Tensor wide = randn({5, 9}, 8);
  Tensor b = wide.slice(1, 2, 6);  // [5, 4], ld 9
  Tensor c = Tensor::zeros({2, 3, 4});
  matmul(a, false, b, false, c);
  std::vector<double> bw = to_double(wide), bs(5 * 4);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) bs[i * 4 + j] = bw[i * 9 + 2 + j];
  expect_close(naive_gemm(to_double(a), 5, false, bs, 4, false, std::vector<double>(24, 0.0), 4, 6, 4, 5, 1, 0), c,
               1e-5, 1e-5, "c");
}

TEST(Matmul, ShapeMismatchThrowsNamingOp) {
  Tensor a = randn({4, 3}, 1), b = randn({4, 6}, 2), c = Tensor::zeros({4, 6});
  try {
    matmul(a, false, b, false, c);
    FAIL() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("matmul"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4, 3]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(matmul(a, false, randn({3, 6}, 3), false, c, 1, 0, randn({5}, 4)), std::invalid_argument);
  EXPECT_THROW(matmul(a, false, randn({3, 6}, 3), false, c.transpose(0, 1)), std::invalid_argument);
}

TEST(MatmulStridedBatched, AttentionLikeLayoutAllTransposes) {
  // Q K^T over 3 (batch, head) pairs with interleaved storage: each matrix
  // has row stride 10 and the batches are 37 elements apart (padding unused).
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      BatchedGemm g;
      g.batch = 3;
      g.m = 4;
      g.n = 5;
      g.k = 3;
      g.trans_a = ta;
      g.trans_b = tb;
      g.lda = 10;
      g.ldb = 11;
      g.ldc = 7;
      g.stride_a = 45;
      g.stride_b = 60;
      g.stride_c = 37;
      g.alpha = 0.5f;
      g.beta = 0.25f;
      Tensor a = randn({3 * 45}, 10), b = randn({3 * 60}, 11), c = randn({3 * 37}, 12);
      std::vector<double> av = to_double(a), bv = to_double(b), want = to_double(c);
      for (int64_t i = 0; i < g.batch; ++i) {
        std::vector<double> ai(av.begin() + i * g.stride_a, av.end()), bi(bv.begin() + i * g.stride_b, bv.end()),
            ci(want.begin() + i * g.stride_c, want.end());
        ci = naive_gemm(ai, g.lda, ta, bi, g.ldb, tb, ci, g.ldc, g.m, g.n, g.k, 0.5, 0.25);
        for (int64_t r = 0; r < g.m; ++r)
          for (int64_t j = 0; j < g.n; ++j) want[i * g.stride_c + r * g.ldc + j] = ci[r * g.ldc + j];
      }
      matmul_strided_batched(a, b, c, g);
      expect_close(want, c, 1e-5, 1e-5, ta ? (tb ? "c TT" : "c TN") : (tb ? "c NT" : "c NN"));
    }
}

TEST(MatmulStridedBatched, ManyBatchesRunInParallelIdentically) {
  // 16 batches (>= threads) take the per-thread path; each must equal its own GEMM.
  BatchedGemm g;
  g.batch = 16;
  g.m = 6;
  g.n = 6;
  g.k = 8;
  g.trans_b = true;
  g.lda = g.ldb = 8;
  g.ldc = 6;
  g.stride_a = g.stride_b = 48;
  g.stride_c = 36;
  Tensor a = randn({16, 6, 8}, 20), b = randn({16, 6, 8}, 21), c = Tensor::zeros({16, 6, 6});
  matmul_strided_batched(a, b, c, g);
  for (int64_t i = 0; i < 16; ++i) {
    Tensor ci = Tensor::zeros({6, 6});
    matmul(a.select(0, i), false, b.select(0, i), true, ci);
    expect_close(to_double(ci), c.select(0, i), 1e-6, 1e-6, "batch");
  }
}

TEST(MatmulStridedBatched, OutOfBoundsLayoutThrows) {
  BatchedGemm g;
  g.batch = 2;
  g.m = g.n = g.k = 4;
  g.lda = g.ldb = g.ldc = 4;
  g.stride_a = g.stride_b = g.stride_c = 16;
  Tensor a = randn({32}, 1), b = randn({31}, 2), c = Tensor::zeros({32});
  EXPECT_THROW(matmul_strided_batched(a, b, c, g), std::invalid_argument);
  g.ldb = 3;  // < k columns
  EXPECT_THROW(matmul_strided_batched(a, randn({32}, 2), c, g), std::invalid_argument);
}

// Double forward of y = x W^T + b contracted with a fixed R: L = sum(R * y).
double linear_loss(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& b,
                   const std::vector<double>& r, int64_t rows, int64_t n, int64_t k) {
  double l = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double y = b[j];
      for (int64_t p = 0; p < k; ++p) y += x[i * k + p] * w[j * k + p];
      l += r[i * n + j] * y;
    }
  return l;
}

TEST(Linear, ForwardMatchesNaive) {
  Tensor x = randn({2, 3, 5}, 30), w = randn({4, 5}, 31), b = randn({4}, 32), y = Tensor::zeros({2, 3, 4});
  linear_forward(x, w, b, y);
  std::vector<double> xv = to_double(x), wv = to_double(w), bv = to_double(b), want(24);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = bv[j];
      for (int p = 0; p < 5; ++p) s += xv[i * 5 + p] * wv[j * 5 + p];
      want[i * 4 + j] = s;
    }
  expect_close(want, y, 1e-5, 1e-5, "y");
  Tensor y2 = Tensor::zeros({2, 3, 4});
  linear_forward(x, w, Tensor(), y2);
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 4; ++j) want[i * 4 + j] -= bv[j];
  expect_close(want, y2, 1e-5, 1e-5, "y without bias");
  EXPECT_THROW(linear_forward(x, randn({4, 6}, 1), b, y), std::invalid_argument);
}

TEST(Linear, BackwardMatchesFiniteDifferencesAndAccumulates) {
  const int64_t rows = 6, n = 4, k = 5;
  Tensor x = randn({2, 3, k}, 40), w = randn({n, k}, 41), b = randn({n}, 42), r = randn({2, 3, n}, 43);
  std::vector<double> xv = to_double(x), wv = to_double(w), bv = to_double(b), rv = to_double(r);
  // Parameter gradients accumulate: start from known nonzero buffers.
  Tensor dw = randn({n, k}, 44), db = randn({n}, 45);
  std::vector<double> dw0 = to_double(dw), db0 = to_double(db);
  Tensor dx = Tensor::full({2, 3, k}, 99.0f);  // overwritten
  linear_backward(r, x, w, dx, dw, db);

  auto gx = central_differences(xv, [&](const std::vector<double>& p) { return linear_loss(p, wv, bv, rv, rows, n, k); });
  auto gw = central_differences(wv, [&](const std::vector<double>& p) { return linear_loss(xv, p, bv, rv, rows, n, k); });
  auto gb = central_differences(bv, [&](const std::vector<double>& p) { return linear_loss(xv, wv, p, rv, rows, n, k); });
  for (size_t i = 0; i < gw.size(); ++i) gw[i] += dw0[i];
  for (size_t i = 0; i < gb.size(); ++i) gb[i] += db0[i];
  expect_close(gx, dx, 1e-5, 1e-5, "dx");
  expect_close(gw, dw, 1e-5, 1e-5, "dw");
  expect_close(gb, db, 1e-5, 1e-5, "db");

  // Undefined outputs are skipped.
  Tensor dw2 = Tensor::zeros({n, k});
  linear_backward(r, x, w, Tensor(), dw2, Tensor());
  expect_close(central_differences(wv, [&](const std::vector<double>& p) { return linear_loss(xv, p, bv, rv, rows, n, k); }),
               dw2, 1e-5, 1e-5, "dw only");
}

TEST(BiasBackward, SumsRowsAndAccumulates) {
  Tensor dy = randn({37, 130}, 50), db = randn({130}, 51);
  std::vector<double> want = to_double(db), dv = to_double(dy);
  for (int i = 0; i < 37; ++i)
    for (int j = 0; j < 130; ++j) want[j] += dv[i * 130 + j];
  bias_backward(dy, db);
  expect_close(want, db, 1e-5, 1e-5, "db");
  EXPECT_THROW(bias_backward(dy, Tensor::zeros({129})), std::invalid_argument);
}

double gelu_ref(Activation act, double v) {
  if (act == Activation::GeluErf) return 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
  const double u = std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v);
  return 0.5 * v * (1.0 + std::tanh(u));
}

// timm's Mlp in double: f = gelu(x W1^T + b1) W2^T + b2, loss = sum r * f.
struct MlpRef {
  int64_t rows, d, hidden;
  std::vector<double> x, w1, b1, w2, b2, r;
  std::vector<double> pre(const std::vector<double>& w1v, const std::vector<double>& b1v) const {
    std::vector<double> p(static_cast<size_t>(rows * hidden));
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < hidden; ++j) {
        double s = b1v[j];
        for (int64_t q = 0; q < d; ++q) s += x[i * d + q] * w1v[j * d + q];
        p[i * hidden + j] = s;
      }
    return p;
  }
  double loss(Activation act, const std::vector<double>& prev, const std::vector<double>& w2v,
              const std::vector<double>& b2v) const {
    double l = 0;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < d; ++j) {
        double s = b2v[j];
        for (int64_t q = 0; q < hidden; ++q) s += gelu_ref(act, prev[i * hidden + q]) * w2v[j * hidden + q];
        l += r[i * d + j] * s;
      }
    return l;
  }
};

TEST(LinearAct, MlpPairMatchesFiniteDifferences) {
  const int64_t rows = 6, d = 5, hidden = 7;
  for (Activation act : {Activation::GeluErf, Activation::GeluTanh}) {
    SCOPED_TRACE(activation_name(act));
    Tensor x = randn({2, 3, d}, 60), w1 = randn({hidden, d}, 61), b1 = randn({hidden}, 62);
    Tensor w2 = randn({d, hidden}, 63), b2 = randn({d}, 64), r = randn({2, 3, d}, 65);
    const MlpRef ref{rows, d, hidden, to_double(x), to_double(w1), to_double(b1), to_double(w2), to_double(b2), to_double(r)};
    Tensor pre = Tensor::empty({2, 3, hidden}), h = Tensor::empty({2, 3, hidden});
    linear_act_forward(act, x, w1, b1, pre, h);
    const std::vector<double> pre_ref = ref.pre(ref.w1, ref.b1);
    std::vector<double> h_ref(pre_ref.size());
    for (size_t i = 0; i < h_ref.size(); ++i) h_ref[i] = gelu_ref(act, pre_ref[i]);
    expect_close(pre_ref, pre, 1e-5, 1e-5, "pre");
    expect_close(h_ref, h, 1e-5, 1e-5, "gelu(pre)");

    Tensor dw2 = randn({d, hidden}, 66), db2 = randn({d}, 67);  // accumulate onto these
    const std::vector<double> dw20 = to_double(dw2), db20 = to_double(db2);
    Tensor dpre = Tensor::full({2, 3, hidden}, 99.0f);  // overwritten
    act_linear_backward(act, r, h, w2, pre, dpre, dw2, db2);
    auto gp = central_differences(pre_ref, [&](const std::vector<double>& p) { return ref.loss(act, p, ref.w2, ref.b2); });
    auto gw = central_differences(ref.w2, [&](const std::vector<double>& p) { return ref.loss(act, pre_ref, p, ref.b2); });
    auto gb = central_differences(ref.b2, [&](const std::vector<double>& p) { return ref.loss(act, pre_ref, ref.w2, p); });
    for (size_t i = 0; i < gw.size(); ++i) gw[i] += dw20[i];
    for (size_t i = 0; i < gb.size(); ++i) gb[i] += db20[i];
    // The CPU's GELU and its derivative are approximations within ~2e-7.
    expect_close(gp, dpre, 1e-5, 1e-5, "dpre");
    expect_close(gw, dw2, 1e-5, 1e-5, "dw2");
    expect_close(gb, db2, 1e-5, 1e-5, "db2");
  }
}

TEST(LinearAct, BadShapesThrowNamingTheOp) {
  Tensor x = randn({4, 5}, 70), w = randn({6, 5}, 71), b = randn({6}, 72);
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string m1 = message([&] { linear_act_forward(Activation::GeluErf, x, w, b, Tensor::empty({4, 6}), Tensor::empty({4, 7})); });
  EXPECT_NE(m1.find("linear_act_forward"), std::string::npos) << m1;
  EXPECT_NE(m1.find("[4, 7]"), std::string::npos) << m1;
  const std::string m2 = message([&] {
    act_linear_backward(Activation::GeluTanh, randn({4, 6}, 73), Tensor::empty({4, 5}), w, Tensor::empty({4, 4}),
                        Tensor::empty({4, 4}), Tensor::zeros({6, 5}), Tensor::zeros({6}));
  });
  EXPECT_NE(m2.find("act_linear_backward"), std::string::npos) << m2;
}

}  // namespace
}  // namespace vt
