#include "eval/manifold.h"

#include <algorithm>
#include <array>
#include <limits>
#include <stdexcept>
#include <string>

#include <Eigen/Dense>

#include "core/cuda_stream.h"
#include "core/pinned_memory.h"
#include "kernels/matmul.h"

namespace vt {
namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One block of the distance matrix: rows [b, e) of U against rows [c, ce) of V.
struct Block {
  int64_t b, e, c, ce;
};

// The blocks in the order the callers walk them: row blocks, and within
// each, column blocks.
std::vector<Block> blocks(int64_t nu, int64_t nv, const ManifoldOptions& o) {
  std::vector<Block> v;
  for (int64_t b = 0; b < nu; b += o.row_block)
    for (int64_t c = 0; c < nv; c += o.col_block) v.push_back({b, std::min(nu, b + o.row_block), c, std::min(nv, c + o.col_block)});
  return v;
}

// Dot products U[b:e] V[c:ce]^T of two float32 row sets, as float64 blocks,
// and the rows' squared norms (float64 from the float32 values).
// CPU: the rows converted to float64 (exact) and multiplied by Eigen's
// blocked GEMM. CUDA: both sets uploaded once; each block is one cuBLAS
// SGEMM (fp32 accumulation, no TF32: kernels/matmul.h) copied into one of
// two page-locked slots behind an event, and the next block is queued
// before the host waits for this one, so the device computes block k + 1
// while the host takes the distances and neighbours of block k.
class Dots {
 public:
  Dots(const float* u, int64_t nu, const float* v, int64_t nv, int64_t d, const ManifoldOptions& o)
      : u_(u), v_(v), d_(d), dev_(o.device) {
    nu_ = norms(u, nu), nv_ = norms(v, nv);
    if (!dev_.is_cpu()) {
      ud_ = Tensor::wrap(const_cast<float*>(u), {nu, d}, DType::F32).to(dev_);
      vd_ = u == v ? ud_ : Tensor::wrap(const_cast<float*>(v), {nv, d}, DType::F32).to(dev_);
      const int64_t most = std::min(nu, o.row_block) * std::min(nv, o.col_block);
      for (Slot& s : slots_) {
        s.dev = Tensor::empty({most}, DType::F32, dev_);
        s.host = PinnedBuffer(static_cast<size_t>(most) * sizeof(float));
        s.ready = CudaEvent::create(dev_.index);
      }
    }
  }
  const Eigen::VectorXd& nu() const { return nu_; }
  const Eigen::VectorXd& nv() const { return nv_; }

  // The dot products of `blk` into `out`; `next` (or null) is the block the
  // caller asks for after it, queued now on CUDA.
  void block(const Block& blk, const Block* next, MatD* out) {
    if (!dev_.is_cpu()) {
      Slot* s = find(blk);
      if (!s) s = queue(blk);
      if (next && !find(*next)) queue(*next);
      s->ready.synchronize();
      out->resize(blk.e - blk.b, blk.ce - blk.c);
      const float* p = static_cast<const float*>(s->host.data());
      const int64_t n = out->size();
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) out->data()[i] = static_cast<double>(p[i]);
      s->has = false;  // read: the slot may take the block after next
      return;
    }
    if (blk.b != ub_ || blk.e != ue_) load(u_, blk.b, blk.e, &um_), ub_ = blk.b, ue_ = blk.e;
    load(v_, blk.c, blk.ce, &vm_);
    out->noalias() = um_ * vm_.transpose();
  }

 private:
  struct Slot {
    Tensor dev;         // the SGEMM's output
    PinnedBuffer host;  // its copy, read by the host once `ready` completed
    CudaEvent ready;
    Block blk{};
    bool has = false;
  };
  Slot* find(const Block& k) {
    for (Slot& s : slots_)
      if (s.has && s.blk.b == k.b && s.blk.c == k.c && s.blk.e == k.e && s.blk.ce == k.ce) return &s;
    return nullptr;
  }
  Slot* queue(const Block& k) {
    Slot* s = &slots_[0];
    if (s->has) s = &slots_[1];  // at most one block is queued ahead of the one being read
    const int64_t m = k.e - k.b, n = k.ce - k.c;
    const Tensor dot = Tensor::wrap(s->dev.raw(), {m, n}, DType::F32, dev_);
    matmul(ud_.slice(0, k.b, k.e), false, vd_.slice(0, k.c, k.ce), true, dot);
    copy_async(Tensor::wrap(s->host.data(), {m, n}, DType::F32), dot, nullptr);  // the compute stream
    s->ready.record(nullptr);
    s->blk = k;
    s->has = true;
    return s;
  }
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
  std::array<Slot, 2> slots_;
  MatD um_, vm_;
  int64_t ub_ = -1, ue_ = -1;
};

// Squared distances of a block from its dot products (in place):
// max(|u|^2 - 2 u.v + |v|^2, 0), float64.
void to_distances(const Dots& dots, int64_t b, int64_t c, MatD* m) {
#pragma omp parallel for schedule(static)
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
  Dots dots(f, n, f, n, d, o);
  MatD dist;
  const std::vector<Block> all = blocks(n, n, o);
  std::vector<double> best;
  for (size_t k = 0; k < all.size(); ++k) {
    const Block& blk = all[k];
    if (blk.c == 0) best.assign(static_cast<size_t>((blk.e - blk.b) * keep), std::numeric_limits<double>::infinity());
    dots.block(blk, k + 1 < all.size() ? &all[k + 1] : nullptr, &dist);
    to_distances(dots, blk.b, blk.c, &dist);
    // Each row's k + 1 smallest so far, by insertion (rows are independent).
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < blk.e - blk.b; ++i) {
      double* top = best.data() + i * keep;
      for (int64_t j = 0; j < blk.ce - blk.c; ++j) {
        double x = dist(i, j);
        if (x >= top[keep - 1]) continue;
        int p = keep - 1;
        while (p > 0 && top[p - 1] > x) top[p] = top[p - 1], --p;
        top[p] = x;
      }
    }
    if (blk.ce == n)
      for (int64_t i = 0; i < blk.e - blk.b; ++i) radii[blk.b + i] = best[i * keep + o.k];
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
  Dots dots(ref, nr, smp, ns, d, o);
  MatD dist;
  const std::vector<Block> all = blocks(nr, ns, o);
  for (size_t k = 0; k < all.size(); ++k) {
    const Block& blk = all[k];
    dots.block(blk, k + 1 < all.size() ? &all[k + 1] : nullptr, &dist);
    to_distances(dots, blk.b, blk.c, &dist);
    // Rows in parallel; a sample's flag is set by any row, so each thread
    // marks its own copy of the block's columns, merged after.
#pragma omp parallel
    {
      std::vector<char> in(static_cast<size_t>(blk.ce - blk.c), 0);
#pragma omp for schedule(static)
      for (int64_t i = 0; i < blk.e - blk.b; ++i) {
        const double r_ref = (*rr)[blk.b + i];
        char ref_hit = 0;
        for (int64_t j = 0; j < blk.ce - blk.c; ++j) {
          const double x = dist(i, j);
          ref_hit |= x <= (*sr)[blk.c + j];
          in[j] |= x <= r_ref;
        }
        ref_in[blk.b + i] |= ref_hit;
      }
#pragma omp critical
      for (int64_t j = 0; j < blk.ce - blk.c; ++j) smp_in[blk.c + j] |= in[j];
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
