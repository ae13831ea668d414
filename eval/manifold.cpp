#include "eval/manifold.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <Eigen/Dense>

namespace vt {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Rows [b, e) of a float32 [n, d] matrix as float64, and their squared norms.
void load_block(const float* f, int64_t b, int64_t e, int64_t d, MatD* m, Eigen::VectorXd* norms) {
  m->resize(e - b, d);
  for (int64_t i = b; i < e; ++i)
    for (int64_t j = 0; j < d; ++j) (*m)(i - b, j) = static_cast<double>(f[i * d + j]);
  *norms = m->rowwise().squaredNorm();
}

// Squared distances of two row blocks: max(|u|^2 - 2 u.v + |v|^2, 0).
void distances(const MatD& u, const Eigen::VectorXd& nu, const MatD& v, const Eigen::VectorXd& nv, MatD* out) {
  out->noalias() = u * v.transpose();
  for (int64_t i = 0; i < out->rows(); ++i)
    for (int64_t j = 0; j < out->cols(); ++j) {
      const double x = (nu[i] - 2.0 * (*out)(i, j)) + nv[j];
      (*out)(i, j) = x > 0.0 ? x : 0.0;
    }
}

void check(int64_t n, int64_t d, const ManifoldOptions& o, const char* what) {
  if (o.k < 1 || o.row_block < 1 || o.col_block < 1)
    throw std::invalid_argument(std::string(what) + ": k, row_block and col_block must be >= 1");
  if (d < 1) throw std::invalid_argument(std::string(what) + ": feature dimension must be >= 1");
  if (n <= o.k)
    throw std::invalid_argument(std::string(what) + ": needs more than k = " + std::to_string(o.k) +
                                " feature vectors, got " + std::to_string(n));
}

}  // namespace

std::vector<double> manifold_radii(const float* f, int64_t n, int64_t d, const ManifoldOptions& o) {
  check(n, d, o, "manifold_radii");
  const int keep = o.k + 1;  // the k + 1 smallest distances of each row, sorted
  std::vector<double> radii(static_cast<size_t>(n));
  MatD u, v, dist;
  Eigen::VectorXd nu, nv;
  for (int64_t b = 0; b < n; b += o.row_block) {
    const int64_t e = std::min(n, b + o.row_block);
    load_block(f, b, e, d, &u, &nu);
    std::vector<double> best(static_cast<size_t>((e - b) * keep), std::numeric_limits<double>::infinity());
    for (int64_t c = 0; c < n; c += o.col_block) {
      const int64_t ce = std::min(n, c + o.col_block);
      load_block(f, c, ce, d, &v, &nv);
      distances(u, nu, v, nv, &dist);
      for (int64_t i = 0; i < e - b; ++i) {
        double* top = best.data() + i * keep;
        for (int64_t j = 0; j < ce - c; ++j) {
          double x = dist(i, j);
          if (x >= top[keep - 1]) continue;
          int p = keep - 1;
          while (p > 0 && top[p - 1] > x) top[p] = top[p - 1], --p;
          top[p] = x;
        }
      }
    }
    for (int64_t i = 0; i < e - b; ++i) radii[b + i] = best[i * keep + o.k];
  }
  return radii;
}

PrecisionRecall precision_recall(const float* ref, int64_t nr, const float* smp, int64_t ns, int64_t d,
                                 const ManifoldOptions& o, const std::vector<double>* rr, const std::vector<double>* sr) {
  check(nr, d, o, "precision_recall (reference features)");
  check(ns, d, o, "precision_recall (sample features)");
  std::vector<double> ref_radii, smp_radii;
  if (!rr) ref_radii = manifold_radii(ref, nr, d, o), rr = &ref_radii;
  if (!sr) smp_radii = manifold_radii(smp, ns, d, o), sr = &smp_radii;
  if (static_cast<int64_t>(rr->size()) != nr || static_cast<int64_t>(sr->size()) != ns)
    throw std::invalid_argument("precision_recall: radii do not match the feature counts");
  std::vector<char> ref_in(static_cast<size_t>(nr), 0), smp_in(static_cast<size_t>(ns), 0);
  MatD u, v, dist;
  Eigen::VectorXd nu, nv;
  for (int64_t b = 0; b < nr; b += o.row_block) {
    const int64_t e = std::min(nr, b + o.row_block);
    load_block(ref, b, e, d, &u, &nu);
    for (int64_t c = 0; c < ns; c += o.col_block) {
      const int64_t ce = std::min(ns, c + o.col_block);
      load_block(smp, c, ce, d, &v, &nv);
      distances(u, nu, v, nv, &dist);
      for (int64_t i = 0; i < e - b; ++i) {
        const double r_ref = (*rr)[b + i];
        for (int64_t j = 0; j < ce - c; ++j) {
          const double x = dist(i, j);
          if (x <= (*sr)[c + j]) ref_in[b + i] = 1;
          if (x <= r_ref) smp_in[c + j] = 1;
        }
      }
    }
  }
  PrecisionRecall out;
  for (char x : smp_in) out.samples_in += x;
  for (char x : ref_in) out.refs_in += x;
  out.precision = static_cast<double>(out.samples_in) / static_cast<double>(ns);
  out.recall = static_cast<double>(out.refs_in) / static_cast<double>(nr);
  return out;
}

}  // namespace vt
