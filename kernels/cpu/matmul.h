// CPU GEMM kernels behind kernels/matmul.h (raw row-major fp32 pointers).
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

// C[m, n] = alpha * op(A) op(B) + beta * C; lda/ldb/ldc are row strides in
// elements of the stored (untransposed) matrices. beta == 0 ignores C's
// old contents.
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

void gemm_strided_batched(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                          float alpha, const float* a, int64_t lda, int64_t stride_a, const float* b,
                          int64_t ldb, int64_t stride_b, float beta, float* c, int64_t ldc,
                          int64_t stride_c);

// y[r, :] += bias for r < rows (row stride ldy).
void add_bias_rows(float* y, int64_t rows, int64_t n, int64_t ldy, const float* bias);

// dbias[n] += sum_r dy[r, :] (row stride ldy).
void bias_backward(const float* dy, int64_t rows, int64_t n, int64_t ldy, float* dbias);

}  // namespace cpu
}  // namespace vt
