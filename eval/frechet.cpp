#include "eval/frechet.h"

#include <cmath>
#include <complex>
#include <stdexcept>

#include "core/log.h"
#include <unsupported/Eigen/MatrixFunctions>

namespace vt {

StatsAccumulator::StatsAccumulator(int64_t dim) : dim_(dim) {
  if (dim < 1) throw std::invalid_argument("StatsAccumulator: feature dimension must be >= 1, got " + std::to_string(dim));
  sum_ = Eigen::VectorXd::Zero(dim);
  outer_ = Eigen::MatrixXd::Zero(dim, dim);
}

void StatsAccumulator::add(const Tensor& feats) {
  if (feats.dtype() != DType::F32 || !feats.device().is_cpu() || !feats.is_contiguous() || feats.dim() != 2 ||
      feats.size(1) != dim_)
    throw std::invalid_argument("StatsAccumulator::add: features " + feats.str() + " must be a contiguous CPU F32 [n, " +
                                std::to_string(dim_) + "] tensor");
  add(feats.f32(), feats.size(0));
}

void StatsAccumulator::add(const float* feats, int64_t n) {
  if (n <= 0) return;
  using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const RowMajorF> X(feats, n, dim_);
  if (count_ == 0) shift_ = X.row(0).transpose().cast<double>();
  Eigen::MatrixXd centered = X.cast<double>().rowwise() - shift_.transpose();
  for (int64_t i = 0; i < n; ++i)
    if (!centered.row(i).allFinite())
      throw std::invalid_argument("StatsAccumulator::add: feature row " + std::to_string(count_ + i) +
                                  " is not finite");
  sum_ += centered.colwise().sum().transpose();
  outer_.selfadjointView<Eigen::Lower>().rankUpdate(centered.transpose());
  count_ += n;
}

GaussianStats StatsAccumulator::finish() const {
  if (count_ < 2)
    throw std::runtime_error("FID statistics need at least 2 samples, got " + std::to_string(count_));
  if (count_ < dim_)
    vt::log().warn("FID statistics from {} samples of dimension {}: the covariance is singular (rank <= {}); "
                 "FID values from fewer samples than dimensions are biased and not comparable",
                 count_, dim_, count_ - 1);
  const double n = static_cast<double>(count_);
  const Eigen::VectorXd m = sum_ / n;
  GaussianStats s;
  s.count = count_;
  s.mu = shift_ + m;
  Eigen::MatrixXd full = outer_.selfadjointView<Eigen::Lower>();
  s.sigma = (full - n * m * m.transpose()) / (n - 1.0);
  return s;
}

SqrtmMethod sqrtm_method_from_name(const std::string& name) {
  if (name == "eig") return SqrtmMethod::SymmetricEig;
  if (name == "schur") return SqrtmMethod::Schur;
  throw std::invalid_argument("unknown sqrtm method '" + name + "' (expected eig or schur)");
}

namespace {

constexpr double kImagTol = 1e-3;  // pytorch-fid: np.allclose(diag.imag, 0, atol=1e-3)

struct TraceSqrt {
  bool finite = false;
  double tr_real = 0, max_imag = 0;
};

TraceSqrt trace_sqrt_eig(const Eigen::MatrixXd& s1, const Eigen::MatrixXd& s2) {
  TraceSqrt r;
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> e1(s1);
  if (e1.info() != Eigen::Success) return r;
  const Eigen::VectorXd root = e1.eigenvalues().cwiseMax(0.0).cwiseSqrt();
  const Eigen::MatrixXd sq1 = e1.eigenvectors() * root.asDiagonal() * e1.eigenvectors().transpose();
  Eigen::MatrixXd m = sq1 * s2 * sq1;
  m = 0.5 * (m + m.transpose()).eval();
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> e2(m, Eigen::EigenvaluesOnly);
  if (e2.info() != Eigen::Success || !e2.eigenvalues().allFinite()) return r;
  for (Eigen::Index i = 0; i < e2.eigenvalues().size(); ++i) {
    const double l = e2.eigenvalues()[i];
    if (l >= 0) r.tr_real += std::sqrt(l);
    else r.max_imag = std::max(r.max_imag, std::sqrt(-l));
  }
  r.finite = std::isfinite(r.tr_real);
  return r;
}

TraceSqrt trace_sqrt_schur(const Eigen::MatrixXd& s1, const Eigen::MatrixXd& s2) {
  TraceSqrt r;
  const Eigen::MatrixXcd prod = (s1 * s2).cast<std::complex<double>>();
  const Eigen::MatrixXcd covmean = prod.sqrt();
  if (!covmean.allFinite()) return r;
  r.finite = true;
  for (Eigen::Index i = 0; i < covmean.rows(); ++i) {
    r.tr_real += covmean(i, i).real();
    r.max_imag = std::max(r.max_imag, std::abs(covmean(i, i).imag()));
  }
  return r;
}

}  // namespace

FrechetResult frechet_distance(const GaussianStats& a, const GaussianStats& b, SqrtmMethod method, double eps) {
  const int64_t d = a.mu.size();
  if (b.mu.size() != d || a.sigma.rows() != d || a.sigma.cols() != d || b.sigma.rows() != d || b.sigma.cols() != d)
    throw std::invalid_argument("frechet_distance: statistics disagree on the feature dimension: mu " +
                                std::to_string(a.mu.size()) + " / sigma " + std::to_string(a.sigma.rows()) + "x" +
                                std::to_string(a.sigma.cols()) + " vs mu " + std::to_string(b.mu.size()) +
                                " / sigma " + std::to_string(b.sigma.rows()) + "x" + std::to_string(b.sigma.cols()));
  if (d == 0) throw std::invalid_argument("frechet_distance: empty statistics");
  if (!a.mu.allFinite() || !b.mu.allFinite() || !a.sigma.allFinite() || !b.sigma.allFinite())
    throw std::invalid_argument("frechet_distance: statistics contain NaN or infinity");

  auto run = [&](const Eigen::MatrixXd& s1, const Eigen::MatrixXd& s2) {
    return method == SqrtmMethod::Schur ? trace_sqrt_schur(s1, s2) : trace_sqrt_eig(s1, s2);
  };
  FrechetResult res;
  TraceSqrt t = run(a.sigma, b.sigma);
  if (!t.finite) {
    vt::log().warn("fid calculation produces singular product; adding {} to diagonal of cov estimates", eps);
    const Eigen::MatrixXd off = eps * Eigen::MatrixXd::Identity(d, d);
    t = run(a.sigma + off, b.sigma + off);
    res.eps_added = true;
    if (!t.finite) throw std::runtime_error("frechet_distance: matrix square root is not finite even with eps I added");
  }
  if (t.max_imag > kImagTol)
    throw std::runtime_error("frechet_distance: imaginary component " + std::to_string(t.max_imag) +
                             " in sqrtm(sigma1 sigma2) exceeds 1e-3");
  res.max_imag = t.max_imag;
  res.mean_term = (a.mu - b.mu).squaredNorm();
  res.tr_sigma1 = a.sigma.trace();
  res.tr_sigma2 = b.sigma.trace();
  res.tr_covmean = t.tr_real;
  res.fid = res.mean_term + res.tr_sigma1 + res.tr_sigma2 - 2.0 * res.tr_covmean;
  return res;
}

}  // namespace vt
