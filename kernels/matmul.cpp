#include "kernels/matmul.h"

#include <string>

#include "kernels/cpu/matmul.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/matmul_lt.h"
#endif

namespace vt {
using opcheck::on_cuda;

namespace {

// A tensor read as a row-major matrix [rows, cols] with row stride ld.
struct MatrixView {
  int64_t rows = 0, cols = 0, ld = 0;
  void* data = nullptr;
  DType dtype = DType::F32;
  float* f32() const { return static_cast<float*>(data); }  // CPU operands are F32 (io_dtype)
};

MatrixView as_matrix(const char* op, const char* name, const Tensor& t) {
  const DType dt = opcheck::io_dtype(op, name, t);
  if (t.dim() < 1) opcheck::fail(op, opcheck::desc(name, t) + " must have at least one dimension");
  const int nd = t.dim();
  const Shape& sh = t.shape();
  const Shape& st = t.strides();
  MatrixView v;
  v.cols = sh[nd - 1];
  v.rows = 1;
  for (int i = 0; i + 1 < nd; ++i) v.rows *= sh[i];
  if (v.cols > 1 && st[nd - 1] != 1)
    opcheck::fail(op, opcheck::desc(name, t) + " must have unit stride in its last dimension");
  // Leading dimensions must collapse into one row index with a single stride.
  int64_t ld = v.cols;
  bool have_ld = false;
  int64_t expect = -1;
  for (int i = nd - 2; i >= 0; --i) {
    if (sh[i] == 1) continue;
    if (!have_ld) {
      ld = st[i];
      have_ld = true;
      expect = st[i] * sh[i];
    } else {
      if (st[i] != expect)
        opcheck::fail(op, opcheck::desc(name, t) + " has leading dimensions that do not flatten into rows");
      expect = st[i] * sh[i];
    }
  }
  if (ld < v.cols) ld = v.cols;  // single row: any ld >= cols is valid
  v.ld = ld;
  v.data = t.raw();
  v.dtype = dt;
  return v;
}

#ifdef VT_CUDA
// c = op(a) op(b) (+ beta c) through a cuBLASLt epilogue; false when it fell
// back (nothing ran) or epilogues are switched off.
bool lt_matmul(const MatrixView& A, bool ta, const MatrixView& B, bool tb, const MatrixView& C, int64_t m, int64_t n,
               int64_t k, float alpha, float beta, cuda::LtEpilogue ep, const float* bias, void* aux, int64_t ldaux,
               float* bgrad) {
  if (!cuda::lt_epilogues()) return false;
  cuda::LtGemm g;
  g.trans_a = ta;
  g.trans_b = tb;
  g.m = m, g.n = n, g.k = k;
  g.alpha = alpha, g.beta = beta;
  g.a = A.data, g.lda = A.ld, g.b = B.data, g.ldb = B.ld, g.c = C.data, g.ldc = C.ld;
  g.ab = A.dtype, g.c_type = C.dtype;
  g.epilogue = ep;
  g.bias = bias, g.aux = aux, g.ldaux = ldaux, g.bgrad = bgrad;
  return cuda::lt_gemm(g);
}
#endif

// The checks shared by linear_act_forward / act_linear_backward: pre and its
// partner (y or dpre) contiguous [..., N] of one dtype.
void check_act_pair(const char* op, const char* name, const Tensor& t, const Tensor& pre, int64_t n) {
  opcheck::defined(op, "pre", pre);
  opcheck::defined(op, name, t);
  opcheck::contiguous(op, "pre", pre);
  opcheck::same_shape(op, name, t, "pre", pre);
  if (t.dtype() != pre.dtype())
    opcheck::fail(op, opcheck::desc(name, t) + " and " + opcheck::desc("pre", pre) + " differ in dtype");
  if (pre.dim() < 1 || pre.size(-1) != n)
    opcheck::fail(op, opcheck::desc("pre", pre) + " must be [..., " + std::to_string(n) + "]");
}

}  // namespace

void matmul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, const Tensor& c, float alpha,
            float beta, const Tensor& bias) {
  const char* op = "matmul";
  MatrixView A = as_matrix(op, "a", a), B = as_matrix(op, "b", b), C = as_matrix(op, "c", c);
  opcheck::same_device(op, a.device(), {{"b", &b}, {"c", &c}, {"bias", &bias}});
  const int64_t m = trans_a ? A.cols : A.rows, k = trans_a ? A.rows : A.cols;
  const int64_t kb = trans_b ? B.cols : B.rows, n = trans_b ? B.rows : B.cols;
  if (k != kb || C.rows != m || C.cols != n)
    opcheck::fail(op, opcheck::desc("a", a) + (trans_a ? "^T" : "") + " x " + opcheck::desc("b", b) +
                          (trans_b ? "^T" : "") + " -> " + opcheck::desc("c", c) + ": inner or outer dimensions differ");
  if (bias.defined()) opcheck::f32_like(op, "bias", bias, {n});
  // a and b share a dtype; c is F32 or that dtype (bf16 GEMMs may write fp32,
  // as the weight gradients do).
  if (B.dtype != A.dtype) opcheck::fail(op, opcheck::desc("a", a) + " and " + opcheck::desc("b", b) + " differ in dtype");
  if (C.dtype != A.dtype && C.dtype != DType::F32)
    opcheck::fail(op, opcheck::desc("c", c) + " must be F32 or the dtype of a and b");
  if (on_cuda(op, a)) {
#ifdef VT_CUDA
    if (bias.defined() && lt_matmul(A, trans_a, B, trans_b, C, m, n, k, alpha, beta, cuda::LtEpilogue::Bias,
                                    bias.f32(), nullptr, 0, nullptr))
      return;
    cuda::gemm(trans_a, trans_b, m, n, k, alpha, A.data, A.ld, B.data, B.ld, beta, C.data, C.ld, A.dtype, C.dtype);
    if (bias.defined()) cuda::add_bias_rows(C.data, m, n, C.ld, bias.f32(), C.dtype);
#endif
    return;
  }
  cpu::gemm(trans_a, trans_b, m, n, k, alpha, A.f32(), A.ld, B.f32(), B.ld, beta, C.f32(), C.ld);
  if (bias.defined()) cpu::add_bias_rows(C.f32(), m, n, C.ld, bias.f32());
}

void matmul_strided_batched(const Tensor& a, const Tensor& b, const Tensor& c, const BatchedGemm& g) {
  const char* op = "matmul_strided_batched";
  for (auto p : {std::make_pair("a", &a), std::make_pair("b", &b), std::make_pair("c", &c)}) {
    opcheck::dtype(op, p.first, *p.second, DType::F32);
    opcheck::contiguous(op, p.first, *p.second);
  }
  opcheck::same_device(op, a.device(), {{"b", &b}, {"c", &c}});
  if (g.batch < 0 || g.m < 0 || g.n < 0 || g.k < 0 || g.stride_a < 0 || g.stride_b < 0 || g.stride_c < 0)
    opcheck::fail(op, "negative batch, size or stride");
  // Stored matrix of each operand: rows x cols with row stride ld.
  auto check_extent = [&](const char* name, const Tensor& t, int64_t rows, int64_t cols, int64_t ld,
                          int64_t stride) {
    if (ld < cols || ld < 1)
      opcheck::fail(op, std::string("ld of ") + name + " = " + std::to_string(ld) + " < its " +
                            std::to_string(cols) + " columns");
    if (g.batch == 0 || rows == 0 || cols == 0) return;
    const int64_t last = (g.batch - 1) * stride + (rows - 1) * ld + cols;
    if (last > t.numel())
      opcheck::fail(op, opcheck::desc(name, t) + " holds " + std::to_string(t.numel()) + " elements but batch " +
                            std::to_string(g.batch) + " with stride " + std::to_string(stride) + " reads " +
                            std::to_string(last));
  };
  check_extent("a", a, g.trans_a ? g.k : g.m, g.trans_a ? g.m : g.k, g.lda, g.stride_a);
  check_extent("b", b, g.trans_b ? g.n : g.k, g.trans_b ? g.k : g.n, g.ldb, g.stride_b);
  check_extent("c", c, g.m, g.n, g.ldc, g.stride_c);
  if (on_cuda(op, a)) {
#ifdef VT_CUDA
    cuda::gemm_strided_batched(g.batch, g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a.f32(), g.lda, g.stride_a,
                               b.f32(), g.ldb, g.stride_b, g.beta, c.f32(), g.ldc, g.stride_c, DType::F32,
                               DType::F32);
#endif
    return;
  }
  cpu::gemm_strided_batched(g.batch, g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, a.f32(), g.lda, g.stride_a,
                            b.f32(), g.ldb, g.stride_b, g.beta, c.f32(), g.ldc, g.stride_c);
}

void linear_forward(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& y) {
  const char* op = "linear_forward";
  opcheck::defined(op, "x", x);
  opcheck::defined(op, "weight", weight);
  opcheck::defined(op, "y", y);
  if (weight.dim() != 2) opcheck::fail(op, opcheck::desc("weight", weight) + " must be [N, K]");
  const int64_t n = weight.size(0), k = weight.size(1);
  if (x.dim() < 1 || x.size(-1) != k || y.dim() != x.dim() || y.size(-1) != n)
    opcheck::fail(op, opcheck::desc("x", x) + ", " + opcheck::desc("weight", weight) + ", " +
                          opcheck::desc("y", y) + ": expected x [..., K], weight [N, K], y [..., N]");
  for (int i = 0; i + 1 < x.dim(); ++i)
    if (x.size(i) != y.size(i))
      opcheck::fail(op, opcheck::desc("x", x) + " and " + opcheck::desc("y", y) + " differ in leading dimensions");
  matmul(x, false, weight, true, y, 1.0f, 0.0f, bias);
}

void linear_backward(const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& dx,
                     const Tensor& dweight, const Tensor& dbias) {
  const char* op = "linear_backward";
  opcheck::defined(op, "dy", dy);
  opcheck::defined(op, "x", x);
  opcheck::defined(op, "weight", weight);
  if (weight.dim() != 2) opcheck::fail(op, opcheck::desc("weight", weight) + " must be [N, K]");
  const int64_t n = weight.size(0), k = weight.size(1);
  if (dy.dim() < 1 || dy.size(-1) != n || x.dim() != dy.dim() || x.size(-1) != k)
    opcheck::fail(op, opcheck::desc("dy", dy) + ", " + opcheck::desc("x", x) + ", " +
                          opcheck::desc("weight", weight) + ": expected dy [..., N], x [..., K], weight [N, K]");
  if (dx.defined()) {
    opcheck::same_shape(op, "dx", dx, "x", x);
    matmul(dy, false, weight, false, dx, 1.0f, 0.0f);
  }
  if (dweight.defined()) opcheck::same_shape(op, "dweight", dweight, "weight", weight);
#ifdef VT_CUDA
  // dW += dy^T x with db = column sums of dy from the same GEMM (BGRADB:
  // cuBLASLt overwrites its bias gradient, so it lands in scratch first).
  if (dweight.defined() && dbias.defined() && dy.device().is_cuda() && cuda::lt_epilogues()) {
    const char* lop = "linear_backward";
    MatrixView D = as_matrix(lop, "dy", dy), X = as_matrix(lop, "x", x), W = as_matrix(lop, "dweight", dweight);
    opcheck::f32_like(lop, "dbias", dbias, {n});
    opcheck::same_device(lop, dy.device(), {{"x", &x}, {"dweight", &dweight}, {"dbias", &dbias}});
    if (X.rows == D.rows && X.dtype == D.dtype && (W.dtype == D.dtype || W.dtype == DType::F32)) {
      Tensor g = Tensor::empty({n}, DType::F32, dy.device());
      if (lt_matmul(D, true, X, false, W, n, k, D.rows, 1.0f, 1.0f, cuda::LtEpilogue::BGradA, nullptr, nullptr, 0,
                    g.f32())) {
        cuda::add_bias_grad(dbias.f32(), g.f32(), n);
        return;
      }
    }
  }
#endif
  if (dweight.defined()) matmul(dy, true, x, false, dweight, 1.0f, 1.0f);
  if (dbias.defined()) bias_backward(dy, dbias);
}

void linear_act_forward(Activation act, const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& pre,
                        const Tensor& y) {
  const char* op = "linear_act_forward";
  opcheck::defined(op, "weight", weight);
  if (weight.dim() != 2) opcheck::fail(op, opcheck::desc("weight", weight) + " must be [N, K]");
  check_act_pair(op, "y", y, pre, weight.size(0));
#ifdef VT_CUDA
  if (act == Activation::GeluTanh && x.defined() && x.device().is_cuda() && bias.defined()) {
    if (x.dim() < 1 || x.size(-1) != weight.size(1) || x.dim() != pre.dim())
      opcheck::fail(op, opcheck::desc("x", x) + ", " + opcheck::desc("weight", weight) + ", " +
                            opcheck::desc("pre", pre) + ": expected x [..., K], weight [N, K], pre [..., N]");
    MatrixView X = as_matrix(op, "x", x), W = as_matrix(op, "weight", weight), Y = as_matrix(op, "y", y);
    MatrixView P = as_matrix(op, "pre", pre);
    opcheck::f32_like(op, "bias", bias, {W.rows});
    opcheck::same_device(op, x.device(), {{"weight", &weight}, {"bias", &bias}, {"pre", &pre}, {"y", &y}});
    if (X.rows == Y.rows && X.dtype == W.dtype && (Y.dtype == X.dtype || Y.dtype == DType::F32) &&
        lt_matmul(X, false, W, true, Y, X.rows, W.rows, X.cols, 1.0f, 0.0f, cuda::LtEpilogue::GeluAuxBias,
                  bias.f32(), P.data, P.ld, nullptr))
      return;
  }
#endif
  linear_forward(x, weight, bias, pre);
  activation_forward(act, pre, y);
}

void act_linear_backward(Activation act, const Tensor& dy, const Tensor& x, const Tensor& weight, const Tensor& pre,
                         const Tensor& dpre, const Tensor& dweight, const Tensor& dbias) {
  const char* op = "act_linear_backward";
  opcheck::defined(op, "weight", weight);
  if (weight.dim() != 2) opcheck::fail(op, opcheck::desc("weight", weight) + " must be [N, K]");
  check_act_pair(op, "dpre", dpre, pre, weight.size(1));
  opcheck::same_shape(op, "x", x, "pre", pre);
  bool fused = false;
#ifdef VT_CUDA
  if (act == Activation::GeluTanh && dy.defined() && dy.device().is_cuda()) {
    if (dy.dim() != pre.dim() || dy.size(-1) != weight.size(0))
      opcheck::fail(op, opcheck::desc("dy", dy) + ", " + opcheck::desc("weight", weight) + ", " +
                            opcheck::desc("pre", pre) + ": expected dy [..., N], weight [N, K], pre [..., K]");
    MatrixView D = as_matrix(op, "dy", dy), W = as_matrix(op, "weight", weight), G = as_matrix(op, "dpre", dpre);
    MatrixView P = as_matrix(op, "pre", pre);
    opcheck::same_device(op, dy.device(), {{"weight", &weight}, {"pre", &pre}, {"dpre", &dpre}});
    fused = D.rows == G.rows && D.dtype == W.dtype && (G.dtype == D.dtype || G.dtype == DType::F32) &&
            lt_matmul(D, false, W, false, G, D.rows, W.cols, W.rows, 1.0f, 0.0f, cuda::LtEpilogue::DGelu, nullptr,
                      P.data, P.ld, nullptr);
  }
#endif
  if (fused) {
    linear_backward(dy, x, weight, Tensor(), dweight, dbias);
    return;
  }
  linear_backward(dy, x, weight, dpre, dweight, dbias);
  activation_backward(act, dpre, pre, dpre);
}

void bias_backward(const Tensor& dy, const Tensor& dbias) {
  const char* op = "bias_backward";
  MatrixView D = as_matrix(op, "dy", dy);
  opcheck::f32_like(op, "dbias", dbias, {D.cols});
  opcheck::same_device(op, dy.device(), {{"dbias", &dbias}});
  if (on_cuda(op, dy)) {
#ifdef VT_CUDA
    cuda::bias_backward(D.data, D.rows, D.cols, D.ld, dbias.f32(), D.dtype);
#endif
    return;
  }
  cpu::bias_backward(D.f32(), D.rows, D.cols, D.ld, dbias.f32());
}

}  // namespace vt

namespace vt {
void set_matmul_tf32(bool on) {
#ifdef VT_CUDA
  cuda::set_tf32(on);
#else
  (void)on;
#endif
}
bool matmul_tf32() {
#ifdef VT_CUDA
  return cuda::tf32();
#else
  return false;
#endif
}
void set_matmul_epilogues(bool on) {
#ifdef VT_CUDA
  cuda::set_lt_epilogues(on);
#else
  (void)on;
#endif
}
}  // namespace vt
