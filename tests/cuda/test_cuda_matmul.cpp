// cuBLAS GEMMs (kernels/cuda/matmul.h) against a naive double-precision
// row-major reference, all transpose combinations, padded leading
// dimensions, alpha/beta, strided batches, bf16 operands with fp32 and bf16
// results; bias add and the deterministic bias gradient; the column sums'
// second stage (add_chunk_sums) against a double-precision sum.
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/cuda/matmul.h"

namespace vt {
namespace {

using namespace cudatest;

// C[i, j] = alpha * sum_k op(A)[i, k] op(B)[k, j] + beta * C[i, j], row-major.
void ref_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const std::vector<float>& a,
              int64_t lda, int64_t oa, const std::vector<float>& b, int64_t ldb, int64_t ob, double beta,
              std::vector<float>& c, int64_t ldc, int64_t oc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[oa + p * lda + i] : a[oa + i * lda + p];
        const double bv = tb ? b[ob + j * ldb + p] : b[ob + p * ldb + j];
        s += av * bv;
      }
      float& cv = c[oc + i * ldc + j];
      cv = static_cast<float>(alpha * s + (beta == 0.0 ? 0.0 : beta * cv));
    }
}

void run_gemm(bool ta, bool tb, int64_t batch, DType ab, DType ct, uint64_t seed) {
  SCOPED_TRACE(std::string("ta=") + std::to_string(ta) + " tb=" + std::to_string(tb) + " batch=" +
               std::to_string(batch) + " " + dtype_name(ab) + "->" + dtype_name(ct));
  const int64_t m = 37, n = 29, k = 70;
  // Stored shapes with padded rows: A is [m, k] or [k, m], B [k, n] or [n, k].
  const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k, b_rows = tb ? n : k, b_cols = tb ? k : n;
  const int64_t lda = a_cols + 3, ldb = b_cols + 5, ldc = n + 2;
  const int64_t sa = a_rows * lda + 7, sb = b_rows * ldb + 1, sc = m * ldc + 4;
  const auto a = representable(randn(static_cast<size_t>(batch * sa), seed), ab);
  const auto b = representable(randn(static_cast<size_t>(batch * sb), seed + 1), ab);
  const auto c0 = representable(randn(static_cast<size_t>(batch * sc), seed + 2), ct);
  const float alpha = 0.75f, beta = ct == DType::F32 ? 0.5f : 0.0f;
  std::vector<float> want = c0;
  for (int64_t i = 0; i < batch; ++i)
    ref_gemm(ta, tb, m, n, k, alpha, a, lda, i * sa, b, ldb, i * sb, beta, want, ldc, i * sc);
  Tensor ga = to_device(a, ab), gb = to_device(b, ab), gc = to_device(c0, ct);
  if (batch == 1)
    cuda::gemm(ta, tb, m, n, k, alpha, ga.raw(), lda, gb.raw(), ldb, beta, gc.raw(), ldc, ab, ct);
  else
    cuda::gemm_strided_batched(batch, ta, tb, m, n, k, alpha, ga.raw(), lda, sa, gb.raw(), ldb, sb, beta, gc.raw(),
                               ldc, sc, ab, ct);
  // fp32 accumulation of k = 70 products: ~1e-6 relative; bf16 C adds a rounding.
  expect_close(to_host(gc), want, ct == DType::BF16 ? 1e-2 : 1e-5, "C");
}

TEST(CudaMatmul, GemmFp32AllTransposes) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 1;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) run_gemm(ta, tb, 1, DType::F32, DType::F32, seed += 10);
}

TEST(CudaMatmul, GemmBf16) {
  VT_SKIP_WITHOUT_GPU();
  uint64_t seed = 100;
  for (int ta = 0; ta < 2; ++ta)
    for (int tb = 0; tb < 2; ++tb) {
      run_gemm(ta, tb, 1, DType::BF16, DType::F32, seed += 10);
      run_gemm(ta, tb, 1, DType::BF16, DType::BF16, seed += 10);
    }
}

TEST(CudaMatmul, StridedBatched) {
  VT_SKIP_WITHOUT_GPU();
  run_gemm(false, true, 5, DType::F32, DType::F32, 300);
  run_gemm(true, false, 3, DType::F32, DType::F32, 310);
  run_gemm(false, false, 4, DType::BF16, DType::BF16, 320);
}

TEST(CudaMatmul, RejectsUnsupportedDtypes) {
  VT_SKIP_WITHOUT_GPU();
  EXPECT_THROW(cuda::gemm(false, false, 2, 2, 2, 1.0f, nullptr, 2, nullptr, 2, 0.0f, nullptr, 2, DType::F32,
                          DType::BF16),
               std::invalid_argument);
}

TEST(CudaMatmul, BiasAddAndBackward) {
  VT_SKIP_WITHOUT_GPU();
  for (DType io : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(io));
    const int64_t rows = 150, n = 300, ldy = 310;
    const auto y0 = representable(randn(static_cast<size_t>(rows * ldy), 1), io);
    const auto bias = randn(static_cast<size_t>(n), 2);
    const auto db0 = randn(static_cast<size_t>(n), 3);
    std::vector<float> want_y = y0, want_db = db0;
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t r = 0; r < rows; ++r) {
        s += y0[r * ldy + j];
        want_y[r * ldy + j] = static_cast<float>(static_cast<double>(y0[r * ldy + j]) + bias[j]);
      }
      want_db[j] = static_cast<float>(db0[j] + s);
    }
    Tensor gy = to_device(y0, io), gbias = to_device(bias, DType::F32), gdb = to_device(db0, DType::F32);
    cuda::bias_backward(gy.raw(), rows, n, ldy, gdb.f32(), io);  // reads y0
    cuda::add_bias_rows(gy.raw(), rows, n, ldy, gbias.f32(), io);
    expect_close(to_host(gy), want_y, out_tol(io), "y + bias (padding columns untouched)");
    expect_close(to_host(gdb), want_db, 1e-5, "dbias");
  }
}

// out[j] += sum_c partial[c, j]: chunk counts around the 16 warps of a block
// (fewer, one more, many) and widths around the 32-column tiles; the same
// bits on a second run.
TEST(CudaMatmul, ChunkSumsMatchADoubleSumAndRepeatBitwise) {
  VT_SKIP_WITHOUT_GPU();
  for (int64_t chunks : {1, 5, 17, 200})
    for (int64_t n : {1, 31, 33, 384}) {
      SCOPED_TRACE("chunks " + std::to_string(chunks) + " n " + std::to_string(n));
      const auto partial = randn(static_cast<size_t>(chunks * n), 40 + static_cast<uint64_t>(chunks));
      const auto out0 = randn(static_cast<size_t>(n), 41);
      std::vector<float> want = out0;
      for (int64_t j = 0; j < n; ++j) {
        double s = 0.0;
        for (int64_t c = 0; c < chunks; ++c) s += partial[static_cast<size_t>(c * n + j)];
        want[static_cast<size_t>(j)] = static_cast<float>(out0[static_cast<size_t>(j)] + s);
      }
      Tensor gp = to_device(partial, DType::F32), a = to_device(out0, DType::F32), b = to_device(out0, DType::F32);
      cuda::add_chunk_sums(a.f32(), gp.f32(), chunks, n);
      cuda::add_chunk_sums(b.f32(), gp.f32(), chunks, n);
      // fp32 sums of up to 200 unit normals: well inside 1e-5 of the total's scale.
      expect_close(to_host(a), want, 1e-5, "sums");
      EXPECT_EQ(to_host(a), to_host(b)) << "a second run gave other bits";
    }
  EXPECT_THROW(cuda::add_chunk_sums(nullptr, nullptr, -1, 4), std::invalid_argument);
}

}  // namespace
}  // namespace vt
