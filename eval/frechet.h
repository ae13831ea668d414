// Gaussian feature statistics and the Frechet distance between them (FID),
// following pytorch-fid (github.com/mseitzer/pytorch-fid, fid_score.py) and
// docs/recipes.md §9:
//   FID = |mu1 - mu2|^2 + tr S1 + tr S2 - 2 tr sqrtm(S1 S2)
// Everything in float64. mu is the mean, sigma the covariance with N - 1.
#pragma once
#include <cstdint>
#include <string>

#include <Eigen/Dense>

#include "core/tensor.h"

namespace vt {

struct GaussianStats {
  Eigen::VectorXd mu;     // [D]
  Eigen::MatrixXd sigma;  // [D, D], symmetric positive semi-definite
  int64_t count = 0;      // samples behind the statistics (0 = unknown, e.g. loaded from .npz)
  int64_t dim() const { return mu.size(); }
};

// Streaming mean/covariance of D-dimensional features, in float64. Sums are
// taken around the first sample (a shift that leaves the covariance
// unchanged) so that large feature means do not cancel catastrophically.
class StatsAccumulator {
 public:
  explicit StatsAccumulator(int64_t dim);
  // feats: [n, D] F32 contiguous CPU tensor (any n >= 0).
  void add(const Tensor& feats);
  void add(const float* feats, int64_t n);
  int64_t count() const { return count_; }
  int64_t dim() const { return dim_; }
  // Needs count >= 2 (throws std::runtime_error otherwise). Logs a warning
  // when count < dim: the covariance is then singular (rank <= count - 1).
  GaussianStats finish() const;

 private:
  int64_t dim_, count_ = 0;
  Eigen::VectorXd shift_, sum_;
  Eigen::MatrixXd outer_;  // lower triangle of sum (x - shift)(x - shift)^T
};

// How tr sqrtm(S1 S2) is obtained.
//  SymmetricEig (default): S1 S2 is similar to the symmetric PSD matrix
//    sqrt(S1) S2 sqrt(S1), so tr sqrtm(S1 S2) = sum_i sqrt(lambda_i) over the
//    eigenvalues of that symmetric matrix (two self-adjoint eigensolves,
//    ~10 s at D = 2048). Rounding can make some lambda_i slightly negative;
//    their square roots are the imaginary parts, and as in pytorch-fid the
//    result is rejected when one exceeds 1e-3 (else the real part is used).
//  Schur: pytorch-fid's exact procedure with Eigen's complex Schur matrix
//    square root (unsupported/MatrixFunctions): covmean = sqrtm(S1 S2);
//    if not finite, retry with eps I added to both; reject when an imaginary
//    diagonal entry exceeds 1e-3, else keep the real part. O(D^3) with a
//    large constant (minutes at D = 2048): meant for cross-checks.
// Both retry with eps I when the first attempt is not finite.
enum class SqrtmMethod { SymmetricEig, Schur };
SqrtmMethod sqrtm_method_from_name(const std::string& name);  // "eig" | "schur"

struct FrechetResult {
  double fid = 0;
  double mean_term = 0;     // |mu1 - mu2|^2
  double tr_sigma1 = 0, tr_sigma2 = 0;
  double tr_covmean = 0;    // real part of tr sqrtm(S1 S2)
  double max_imag = 0;      // largest imaginary part seen (eigenvalue root or diagonal entry)
  bool eps_added = false;   // the eps I retry happened
};

// Throws std::invalid_argument when dimensions differ or entries are not
// finite, std::runtime_error on a significant imaginary component.
FrechetResult frechet_distance(const GaussianStats& a, const GaussianStats& b,
                               SqrtmMethod method = SqrtmMethod::SymmetricEig, double eps = 1e-6);

}  // namespace vt
