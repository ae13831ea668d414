// Naive column-major cuBLAS GEMMs, exactly as the cuBLAS documentation
// defines them, to check the row-major mapping of kernels/cuda/matmul.cu.
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <functional>
static float ldv(const void* p, cudaDataType_t t, int64_t i) {
  return t == CUDA_R_32F ? static_cast<const float*>(p)[i] : __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}
static void stv(void* p, cudaDataType_t t, int64_t i, float v) {
  if (t == CUDA_R_32F) static_cast<float*>(p)[i] = v;
  else static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
}
static int es(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }
#include "emu_streams.h"
// A handle keeps the stream its GEMMs are queued on (cublasSetStream; the
// default stream until then, as cublasCreate documents).
struct cublasContext {
  cudaStream_t stream = nullptr;
};
cublasStatus_t cublasCreate_v2(cublasHandle_t* h) {
  if (!h) return CUBLAS_STATUS_INVALID_VALUE;
  *h = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t h, cudaStream_t s) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  h->stream = s;
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusString(cublasStatus_t) { return "emu"; }
static void gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const void* alpha, const void* A,
                 cudaDataType_t at, int lda, long long sa, const void* B, cudaDataType_t bt, int ldb, long long sb,
                 const void* beta, void* C, cudaDataType_t ct, int ldc, long long sc, int batch) {
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  for (int bi = 0; bi < batch; ++bi) {
    const char* a = static_cast<const char*>(A) + bi * sa * es(at);
    const char* b = static_cast<const char*>(B) + bi * sb * es(bt);
    char* c = static_cast<char*>(C) + bi * sc * es(ct);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double s = 0;
        for (int p = 0; p < k; ++p) {
          const float av = ta == CUBLAS_OP_N ? ldv(a, at, i + (int64_t)p * lda) : ldv(a, at, p + (int64_t)i * lda);
          const float bv = tb == CUBLAS_OP_N ? ldv(b, bt, p + (int64_t)j * ldb) : ldv(b, bt, j + (int64_t)p * ldb);
          s += (double)av * bv;
        }
        const int64_t ci = i + (int64_t)j * ldc;
        stv(c, ct, ci, (float)(al * s + (be == 0.0f ? 0.0 : be * ldv(c, ct, ci))));
      }
  }
}
// Queued on the handle's stream (emu_streams.h); alpha and beta are host
// scalars, read at the call as cuBLAS does (CUBLAS_POINTER_MODE_HOST).
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                          int k, const void* alpha, const void* A, cudaDataType_t at, int lda,
                                          long long sa, const void* B, cudaDataType_t bt, int ldb, long long sb,
                                          const void* beta, void* C, cudaDataType_t ct, int ldc, long long sc,
                                          int batch, cublasComputeType_t, cublasGemmAlgo_t) {
  if (!h) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (lda < 1 || ldb < 1 || ldc < m) return CUBLAS_STATUS_INVALID_VALUE;
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  vt_emu::submit(h->stream, [=] { gemm(ta, tb, m, n, k, &al, A, at, lda, sa, B, bt, ldb, sb, &be, C, ct, ldc, sc, batch); });
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                            const void* alpha, const void* A, cudaDataType_t at, int lda, const void* B,
                            cudaDataType_t bt, int ldb, const void* beta, void* C, cudaDataType_t ct, int ldc,
                            cublasComputeType_t cp, cublasGemmAlgo_t al) {
  return cublasGemmStridedBatchedEx(h, ta, tb, m, n, k, alpha, A, at, lda, 0, B, bt, ldb, 0, beta, C, ct, ldc, 0, 1, cp, al);
}
