#include "kernels/cuda/matmul.h"

#include <cublas_v2.h>

#include <map>
#include <string>

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

void check_cublas(cublasStatus_t s, const char* op) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string(op) + ": cuBLAS error: " + cublasGetStatusString(s));
}

// Handles are not safe to share between host threads issuing work
// concurrently, hence one per (thread, device). Never destroyed: destroying
// at thread exit can race the CUDA runtime's own teardown.
cublasHandle_t handle_for_current_device(const char* op) {
  thread_local std::map<int, cublasHandle_t> handles;
  int dev = 0;
  check(cudaGetDevice(&dev), op);
  auto it = handles.find(dev);
  if (it != handles.end()) return it->second;
  cublasHandle_t h = nullptr;
  check_cublas(cublasCreate(&h), op);
  handles[dev] = h;
  return h;
}

cudaDataType_t cuda_type(DType t, const char* op) {
  if (t == DType::F32) return CUDA_R_32F;
  if (t == DType::BF16) return CUDA_R_16BF;
  bad_dtype(op, t);
}

void check_types(const char* op, DType ab, DType c) {
  const bool ok = (ab == DType::F32 && c == DType::F32) || (ab == DType::BF16 && (c == DType::BF16 || c == DType::F32));
  if (!ok)
    throw std::invalid_argument(std::string(op) + ": unsupported dtypes A/B " + dtype_name(ab) + ", C " +
                                dtype_name(c) + " (F32/F32, BF16/BF16 or BF16/F32)");
}

int as_int(int64_t v, const char* what, const char* op) {
  if (v < 0 || v > 2147483647LL)
    throw std::invalid_argument(std::string(op) + ": " + what + " = " + std::to_string(v) + " out of cuBLAS's int range");
  return static_cast<int>(v);
}

template <typename T>
__global__ void add_bias_kernel(T* y, int64_t rows, int64_t n, int64_t ldy, const float* __restrict__ bias) {
  const int64_t total = rows * n;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t r = i / n, j = i - r * n;
    st(y, r * ldy + j, ld(y, r * ldy + j) + bias[j]);
  }
}

template <typename T>
__global__ void bias_partials_kernel(const T* __restrict__ dy, int64_t rows, int64_t n, int64_t ldy,
                                     float* __restrict__ partial) {
  const int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (j >= n) return;
  const int64_t c = blockIdx.y;
  const int64_t r0 = c * kRowsPerChunk, r1 = min(rows, r0 + kRowsPerChunk);
  float acc = 0.0f;
  for (int64_t r = r0; r < r1; ++r) acc += ld(dy, r * ldy + j);
  partial[c * n + j] = acc;
}

}  // namespace

namespace {
bool g_tf32 = false;
}
void set_tf32(bool on) { g_tf32 = on; }
bool tf32() { return g_tf32; }

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const void* a, int64_t lda,
          const void* b, int64_t ldb, float beta, void* c, int64_t ldc, DType ab, DType c_type,
          cudaStream_t stream) {
  gemm_strided_batched(1, trans_a, trans_b, m, n, k, alpha, a, lda, 0, b, ldb, 0, beta, c, ldc, 0, ab, c_type,
                       stream);
}

void gemm_strided_batched(int64_t batch, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                          const void* a, int64_t lda, int64_t stride_a, const void* b, int64_t ldb, int64_t stride_b,
                          float beta, void* c, int64_t ldc, int64_t stride_c, DType ab, DType c_type,
                          cudaStream_t stream) {
  const char* op = "cuda::gemm";
  check_types(op, ab, c_type);
  if (batch == 0 || m == 0 || n == 0) return;
  cublasHandle_t h = handle_for_current_device(op);
  // Stream 0 is the compute stream, the per-thread default stream of this
  // build (CMakeLists.txt); cuBLAS would read 0 as the legacy one.
  check_cublas(cublasSetStream(h, stream ? stream : cudaStreamPerThread), op);
  // Column-major view: C^T [n, m] = op(B)^T [n, k] * op(A)^T [k, m].
  const cublasOperation_t opb = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t opa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int in = as_int(n, "n", op), im = as_int(m, "m", op), ik = as_int(k, "k", op);
  // cuBLAS rejects leading dimensions < 1 even when k == 0.
  const int ildb = as_int(ldb < 1 ? 1 : ldb, "ldb", op), ilda = as_int(lda < 1 ? 1 : lda, "lda", op);
  const int ildc = as_int(ldc, "ldc", op);
  const cudaDataType_t tab = cuda_type(ab, op), tc = cuda_type(c_type, op);
  const cublasComputeType_t compute =
      g_tf32 && ab == DType::F32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (batch == 1) {
    check_cublas(cublasGemmEx(h, opb, opa, in, im, ik, &alpha, b, tab, ildb, a, tab, ilda, &beta, c, tc, ildc,
                              compute, CUBLAS_GEMM_DEFAULT),
                 op);
  } else {
    check_cublas(cublasGemmStridedBatchedEx(h, opb, opa, in, im, ik, &alpha, b, tab, ildb, stride_b, a, tab, ilda,
                                            stride_a, &beta, c, tc, ildc, stride_c, as_int(batch, "batch", op),
                                            compute, CUBLAS_GEMM_DEFAULT),
                 op);
  }
}

void add_bias_rows(void* y, int64_t rows, int64_t n, int64_t ldy, const float* bias, DType io, cudaStream_t stream) {
  const char* op = "cuda::add_bias_rows";
  if (rows == 0 || n == 0) return;
  VT_CUDA_DISPATCH_IO(op, io, T,
                      add_bias_kernel<T><<<grid_1d(rows * n, 256), 256, 0, stream>>>(static_cast<T*>(y), rows, n,
                                                                                      ldy, bias));
  check_launch(op);
}

void bias_backward(const void* dy, int64_t rows, int64_t n, int64_t ldy, float* dbias, DType io,
                   cudaStream_t stream) {
  const char* op = "cuda::bias_backward";
  if (rows == 0 || n == 0) return;
  const int64_t chunks = row_chunks(rows);
  if (chunks > 65535) throw std::invalid_argument(std::string(op) + ": too many rows " + std::to_string(rows));
  Workspace ws(static_cast<size_t>(chunks * n) * sizeof(float), stream);
  const dim3 grid(static_cast<unsigned>((n + kColThreads - 1) / kColThreads), static_cast<unsigned>(chunks));
  VT_CUDA_DISPATCH_IO(op, io, T,
                      bias_partials_kernel<T><<<grid, kColThreads, 0, stream>>>(static_cast<const T*>(dy), rows, n,
                                                                                 ldy, ws.f32()));
  check_launch(op);
  finalize_chunks<1>(ws.f32(), chunks, n, ChunkOutputs<1>{{dbias}}, stream, op);
}

void add_bias_grad(float* dbias, const float* g, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  finalize_chunks<1>(g, 1, n, ChunkOutputs<1>{{dbias}}, stream, "cuda::add_bias_grad");
}

void add_chunk_sums(float* out, const float* partial, int64_t chunks, int64_t n, cudaStream_t stream) {
  const char* op = "cuda::add_chunk_sums";
  if (chunks < 0 || n < 0) throw std::invalid_argument(std::string(op) + ": negative chunks or columns");
  if (n == 0) return;
  finalize_chunks<1>(partial, chunks, n, ChunkOutputs<1>{{out}}, stream, op);
}

}  // namespace cuda
}  // namespace vt
