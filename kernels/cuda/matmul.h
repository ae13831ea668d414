// CUDA GEMMs behind kernels/matmul.h: cuBLAS (cublasGemmEx /
// cublasGemmStridedBatchedEx) on row-major matrices through the usual
// transpose identity: row-major C = op(A) op(B) is column-major
// C^T = op(B)^T op(A)^T, so B and A are handed to cuBLAS swapped, with the
// same transpose flags and leading dimensions.
//
// Operand dtypes: A and B in `ab` (F32 or BF16), C in `c_type` (F32, or BF16
// when ab is BF16; F32 C with BF16 A/B is the weight-gradient case, dW in
// fp32 from bf16 activations). Accumulation is always fp32
// (CUBLAS_COMPUTE_32F: no TF32, so F32 results match the CPU's sgemm to
// rounding). lda/ldb/ldc are row strides in elements of the stored matrices;
// beta == 0 ignores C's old contents (cuBLAS semantics, as on the CPU).
// One cuBLAS handle per (host thread, device), created on first use.
// Errors: std::invalid_argument (dtype combination), std::runtime_error
// (cuBLAS/CUDA status, named).
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

// TF32 tensor cores for F32 x F32 GEMMs (CUBLAS_COMPUTE_32F_FAST_TF32),
// process-wide; off by default. BF16 operands are unaffected.
void set_tf32(bool on);
bool tf32();

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const void* a, int64_t lda,
          const void* b, int64_t ldb, float beta, void* c, int64_t ldc, DType ab, DType c_type,
          cudaStream_t stream = 0);

void gemm_strided_batched(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                          float beta, void* c, int64_t ldc, int64_t stride_c, DType ab, DType c_type,
                          cudaStream_t stream = 0);

// y[r, :] += bias for r < rows (row stride ldy); y in `io`, bias fp32.
void add_bias_rows(void* y, int64_t rows, int64_t n, int64_t ldy, const float* bias, DType io,
                   cudaStream_t stream = 0);

// dbias[n] += sum_r dy[r, :] (row stride ldy); dy in `io`, dbias fp32.
// Deterministic two-stage column sum: per-64-row-chunk partials, then
// add_chunk_sums (the same bits on every run).
void bias_backward(const void* dy, int64_t rows, int64_t n, int64_t ldy, float* dbias, DType io,
                   cudaStream_t stream = 0);

// dbias[n] += g[n] (fp32): a bias gradient a cuBLASLt epilogue wrote into
// scratch (kernels/cuda/matmul_lt.h overwrites; parameter gradients accumulate).
void add_bias_grad(float* dbias, const float* g, int64_t n, cudaStream_t stream = 0);

// out[j] += sum over c < chunks of partial[c * n + j] (all fp32, contiguous
// [chunks, n]): the second stage of every column sum (bias, LayerNorm and
// SiameseNorm parameter gradients; kernels/cuda/common.cuh's
// finalize_chunks), a block per 32 columns with 16 warps over the chunks
// and a fixed tree, so the result is the same bits on every run. Public for
// the benchmark (bench_cuda_kernels) and its test.
void add_chunk_sums(float* out, const float* partial, int64_t chunks, int64_t n, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
