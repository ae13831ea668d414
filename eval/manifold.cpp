#include "eval/manifold.h"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

#include <Eigen/Dense>

#include "kernels/matmul.h"

namespace vt {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Dot products U[b:e] V[c:ce]^T of two float32 row sets, as float64 blocks,
// and the rows' squared norms (float64 from the float32 values).
// CPU: the rows converted to float64 (exact) and multiplied by Eigen's
// blocked GEMM. CUDA: both sets uploaded once, each block one cuBLAS SGEMM
// (fp32 accumulation, no TF32: kernels/matmul.h) copied back.
class Dots {
 public:
  Dots(const float* u, int64_t nu, const float* v, int64_t nv, int64_t d, Device dev) : u_(u), v_(v), d_(d), dev_(dev) {
    nu_ = norms(u, nu), nv_ = norms(v, nv);
    if (!dev.is_cpu()) {
      ud_ = Tensor::wrap(const_cast<float*>(u), {nu, d}, DType::F32).to(dev);
      vd_ = u == v ? ud_ : Tensor::wrap(const_cast<float*>(v), {nv, d}, DType::F32).to(dev);
    }
  }
  const Eigen::VectorXd& nu() const { return nu_; }
  const Eigen::VectorXd& nv() const { return nv_; }
  void block(int64_t b, int64_t e, int64_t c, int64_t ce, MatD* out) {
    if (!dev_.is_cpu()) {
      Tensor dot = Tensor::empty({e - b, ce - c}, DType::F32, dev_);
      matmul(ud_.slice(0, b, e), false, vd_.slice(0, c, ce), true, dot);
      const Tensor h = dot.to(Device::cpu());
      out->resize(e - b, ce - c);
      const float* p = h.f32();
      for (int64_t i = 0; i < out->size(); ++i) out->data()[i] = static_cast<double>(p[i]);
      return;
    }
    if (b != ub_ || e != ue_) load(u_, b, e, &um_), ub_ = b, ue_ = e;
    load(v_, c, ce, &vm_);
    out->noalias() = um_ * vm_.transpose();
  }

 private:
  Eigen::VectorXd norms(const float* f, int64_t n) const {
    Eigen::VectorXd r(n);
    for (int64_t i = 0; i < n; ++i) {
      double s = 0;
      for (int64_t j = 0; j < d_; ++j) s += static_cast<double>(f[i * d_ + j]) * f[i * d_ + j];
      r[i] = s;
    }
    return r;
  }
  void load(const float* f, int64_t b, int64_t e, MatD* m) const {
    m->resize(e - b, d_);
    for (int64_t i = b; i < e; ++i)
      for (int64_t j = 0; j < d_; ++j) (*m)(i - b, j) = static_cast<double>(f[i * d_ + j]);
  }
  const float *u_, *v_;
  int64_t d_;
  Device dev_;
  Eigen::VectorXd nu_, nv_;
  Tensor ud_, vd_;
  MatD um_, vm_;
  int64_t ub_ = -1, ue_ = -1;
};

// Squared distances of a block from its dot products (in place):
// max(|u|^2 - 2 u.v + |v|^2, 0), float64.
void to_distances(const Dots& dots, int64_t b, int64_t c, MatD* m) {
  for (int64_t i = 0; i < m->rows(); ++i)
    for (int64_t j = 0; j < m->cols(); ++j) {
      const double x = (dots.nu()[b + i] - 2.0 * (*m)(i, j)) + dots.nv()[c + j];
      (*m)(i, j) = x > 0.0 ? x : 0.0;
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
  Dots dots(f, n, f, n, d, o.device);
  MatD dist;
  for (int64_t b = 0; b < n; b += o.row_block) {
    const int64_t e = std::min(n, b + o.row_block);
    std::vector<double> best(static_cast<size_t>((e - b) * keep), std::numeric_limits<double>::infinity());
    for (int64_t c = 0; c < n; c += o.col_block) {
      const int64_t ce = std::min(n, c + o.col_block);
      dots.block(b, e, c, ce, &dist);
      to_distances(dots, b, c, &dist);
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
  Dots dots(ref, nr, smp, ns, d, o.device);
  MatD dist;
  for (int64_t b = 0; b < nr; b += o.row_block) {
    const int64_t e = std::min(nr, b + o.row_block);
    for (int64_t c = 0; c < ns; c += o.col_block) {
      const int64_t ce = std::min(ns, c + o.col_block);
      dots.block(b, e, c, ce, &dist);
      to_distances(dots, b, c, &dist);
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
