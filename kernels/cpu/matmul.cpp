#include "kernels/cpu/matmul.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vt {
namespace cpu {

namespace {

void check_status(dnnl_status_t st, int64_t m, int64_t n, int64_t k) {
  if (st != dnnl_success)
    throw std::runtime_error("gemm: dnnl_sgemm failed with status " + std::to_string(static_cast<int>(st)) +
                             " for m=" + std::to_string(m) + " n=" + std::to_string(n) +
                             " k=" + std::to_string(k));
}

// BLAS leaves C = beta * C for k == 0; oneDNN rejects empty K, so do it here.
void scale_only(int64_t m, int64_t n, float beta, float* c, int64_t ldc) {
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) return scale_only(m, n, beta, c, ldc);
  check_status(dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c,
                          ldc),
               m, n, k);
}

void gemm_strided_batched(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          float alpha, const float* a, int64_t lda, int64_t stride_a, const float* b,
                          int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
                          int64_t stride_c) {
  if (batch <= 0 || m == 0 || n == 0) return;
  // Attention GEMMs are small (T x Dh); one whole GEMM per thread beats
  // splitting each small GEMM across threads. oneDNN runs single-threaded
  // when called inside an OpenMP parallel region.
  const int threads = omp_get_max_threads();
  if (batch >= threads && threads > 1 && !omp_in_parallel()) {
    dnnl_status_t first_error = dnnl_success;
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t i = 0; i < batch; ++i) {
      dnnl_status_t st = dnnl_success;
      if (k == 0) {
        scale_only(m, n, beta, c + i * stride_c, ldc);
      } else {
        st = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a + i * stride_a, lda,
                        b + i * stride_b, ldb, beta, c + i * stride_c, ldc);
      }
      if (st != dnnl_success) {
#pragma omp critical(vt_gemm_batched_error)
        first_error = st;
      }
    }
    check_status(first_error, m, n, k);
    return;
  }
  for (int64_t i = 0; i < batch; ++i)
    gemm(trans_a, trans_b, m, n, k, alpha, a + i * stride_a, lda, b + i * stride_b, ldb, beta, c + i * stride_c,
         ldc);
}

void add_bias_rows(float* y, int64_t rows, int64_t n, int64_t ldy, const float* bias) {
#pragma omp parallel for schedule(static) if (rows * n > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    float* row = y + r * ldy;
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) row[j] += bias[j];
  }
}

void bias_backward(const float* dy, int64_t rows, int64_t n, int64_t ldy, float* dbias) {
  // Column blocks per thread, rows summed in order: each column's sum is
  // independent of the thread count, and dy is still read along rows.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (rows * n > 32768)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kBlock, j1 = std::min(n, j0 + kBlock);
    double acc[kBlock] = {};
    for (int64_t r = 0; r < rows; ++r) {
      const float* row = dy + r * ldy;
#pragma omp simd
      for (int64_t j = j0; j < j1; ++j) acc[j - j0] += row[j];
    }
    for (int64_t j = j0; j < j1; ++j) dbias[j] += static_cast<float>(acc[j - j0]);
  }
}

}  // namespace cpu
}  // namespace vt
