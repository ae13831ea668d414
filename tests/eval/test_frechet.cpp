// Statistics and Frechet distance against numpy / pytorch-fid (scipy sqrtm)
// values written by tools/fid_fixture.py, and closed forms.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "core/npz.h"
#include "eval/frechet.h"

namespace vt {
namespace {

const std::map<std::string, NpyArray>& cases() {
  static const auto m = load_npz(std::string(VT_FIXTURES_DIR) + "/eval/frechet_cases.npz");
  return m;
}

GaussianStats stats_from_fixture(const std::string& name, int i) {
  const NpyArray& mu = cases().at(name + "_mu" + std::to_string(i));
  const NpyArray& sg = cases().at(name + "_sigma" + std::to_string(i));
  const int64_t d = mu.shape[0];
  GaussianStats s;
  std::vector<double> m = mu.as<double>(), c = sg.as<double>();
  s.mu = Eigen::Map<Eigen::VectorXd>(m.data(), d);
  s.sigma = Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(c.data(), d, d);
  return s;
}

GaussianStats stats_from_features(const std::string& name, int i) {
  const NpyArray& f = cases().at(name + "_feat" + std::to_string(i));
  std::vector<float> v = f.as<float>();
  StatsAccumulator acc(f.shape[1]);
  // Uneven chunks: the result must not depend on how batches are split.
  const int64_t n = f.shape[0], d = f.shape[1];
  int64_t start = 0, chunk = 1;
  while (start < n) {
    const int64_t len = std::min(chunk, n - start);
    acc.add(v.data() + start * d, len);
    start += len;
    chunk = chunk * 3 + 1;
  }
  return acc.finish();
}

double fixture_fid(const std::string& name) { return cases().at(name + "_fid").as<double>()[0]; }

class FrechetFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(FrechetFixture, StatisticsMatchNumpy) {
  for (int i : {1, 2}) {
    GaussianStats want = stats_from_fixture(GetParam(), i), got = stats_from_features(GetParam(), i);
    const double scale = want.sigma.cwiseAbs().maxCoeff();
    EXPECT_LE((got.mu - want.mu).cwiseAbs().maxCoeff(), 1e-9 * (1 + want.mu.cwiseAbs().maxCoeff()));
    EXPECT_LE((got.sigma - want.sigma).cwiseAbs().maxCoeff(), 1e-9 * scale);
    EXPECT_EQ(got.count, cases().at(GetParam() + "_feat" + std::to_string(i)).shape[0]);
  }
}

TEST_P(FrechetFixture, MatchesScipyBothMethods) {
  const double want = fixture_fid(GetParam());
  GaussianStats a = stats_from_fixture(GetParam(), 1), b = stats_from_fixture(GetParam(), 2);
  for (SqrtmMethod m : {SqrtmMethod::SymmetricEig, SqrtmMethod::Schur}) {
    FrechetResult r = frechet_distance(a, b, m);
    EXPECT_NEAR(r.fid, want, 1e-6 * std::fabs(want)) << "method " << static_cast<int>(m);
    EXPECT_NEAR(r.fid, r.mean_term + r.tr_sigma1 + r.tr_sigma2 - 2 * r.tr_covmean, 1e-9 * std::fabs(want));
  }
  // From our own accumulated statistics too.
  FrechetResult r = frechet_distance(stats_from_features(GetParam(), 1), stats_from_features(GetParam(), 2));
  EXPECT_NEAR(r.fid, want, 1e-6 * std::fabs(want));
}

INSTANTIATE_TEST_SUITE_P(Cases, FrechetFixture, ::testing::Values("well", "sing", "illc", "offset"));

TEST(Frechet, ClosedFormDiagonal) {
  // Commuting diagonal covariances: tr sqrtm(S1 S2) = sum sqrt(a_i b_i).
  GaussianStats a, b;
  a.mu = Eigen::Vector3d(1, 2, 3);
  b.mu = Eigen::Vector3d(0, 2, 5);
  a.sigma = Eigen::Vector3d(4, 1, 9).asDiagonal();
  b.sigma = Eigen::Vector3d(1, 16, 4).asDiagonal();
  const double want = (1 + 0 + 4) + (14) + (21) - 2 * (2 + 4 + 6);
  for (SqrtmMethod m : {SqrtmMethod::SymmetricEig, SqrtmMethod::Schur})
    EXPECT_NEAR(frechet_distance(a, b, m).fid, want, 1e-12);
}

TEST(Frechet, IdenticalStatisticsGiveZero) {
  GaussianStats a = stats_from_fixture("well", 1);
  EXPECT_NEAR(frechet_distance(a, a).fid, 0.0, 1e-9 * a.sigma.trace());
}

TEST(Frechet, SchurRetriesWithEpsOnExactlySingularProduct) {
  // S1 = S2 = diag(4, 0, 0): the Schur square root divides 0 by 0, so the
  // eps retry runs: sqrtm((S + eps)^2) = S + eps I, FID = 8 - 2 (4 + 3 eps).
  GaussianStats a;
  a.mu = Eigen::Vector3d::Zero();
  a.sigma = Eigen::Vector3d(4, 0, 0).asDiagonal();
  const double eps = 1e-6;
  FrechetResult r = frechet_distance(a, a, SqrtmMethod::Schur, eps);
  EXPECT_TRUE(r.eps_added);
  EXPECT_NEAR(r.fid, -6 * eps, 1e-12);
  // The eigenvalue route needs no retry and gives the exact 0.
  FrechetResult e = frechet_distance(a, a, SqrtmMethod::SymmetricEig, eps);
  EXPECT_FALSE(e.eps_added);
  EXPECT_NEAR(e.fid, 0.0, 1e-12);
}

TEST(Frechet, RejectsSignificantImaginaryPart) {
  // Not a covariance: S1 = -I makes S1 S2 negative definite, sqrt imaginary.
  GaussianStats a, b;
  a.mu = b.mu = Eigen::Vector2d::Zero();
  a.sigma = -Eigen::Matrix2d::Identity();
  b.sigma = Eigen::Matrix2d::Identity();
  EXPECT_THROW(frechet_distance(a, b, SqrtmMethod::Schur), std::runtime_error);
  b.sigma = -Eigen::Matrix2d::Identity();
  a.sigma = Eigen::Matrix2d::Identity() * 2;
  EXPECT_THROW(frechet_distance(a, b, SqrtmMethod::SymmetricEig), std::runtime_error);
}

TEST(Frechet, RejectsMismatchedDimensions) {
  GaussianStats a = stats_from_fixture("well", 1), b = stats_from_fixture("sing", 1);
  try {
    frechet_distance(a, b);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("32"), std::string::npos) << e.what();
  }
}

TEST(StatsAccumulator, NeedsTwoSamplesAndRightWidth) {
  StatsAccumulator acc(4);
  std::vector<float> row = {1, 2, 3, 4};
  acc.add(row.data(), 1);
  EXPECT_THROW(acc.finish(), std::runtime_error);
  EXPECT_THROW(acc.add(Tensor::zeros({3, 5})), std::invalid_argument);
  std::vector<float> bad = {1, NAN, 3, 4};
  EXPECT_THROW(acc.add(bad.data(), 1), std::invalid_argument);
}

}  // namespace
}  // namespace vt
