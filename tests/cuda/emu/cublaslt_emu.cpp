// Host stand-in for the cuBLASLt calls of kernels/cuda/matmul_lt.cpp (the
// emulator only): naive column-major GEMMs with the epilogues that file
// uses, as NVIDIA's cuBLASLt reference defines them, so the emulator runs
// the GPU's code path (row-major mapping, bias/aux/bias-gradient layout).
//   D = alpha op(A) op(B) + beta C, then per epilogue
//   BIAS           D += bias[row]
//   GELU_AUX_BIAS  t = that + bias[row]; aux = t; D = gelu_tanh(t)
//   DGELU          D *= gelu_tanh'(aux)
//   BGRADB         bias[col] = sum_k op(B)[k, col]  (overwritten)
// The epilogue acts on the fp32 accumulator, then D (and aux) are rounded
// once to their type. Descriptors are host structs behind the opaque
// pointers; the heuristic returns one placeholder algorithm that needs a
// 1 MiB workspace (refused without it). The rules cublasLt.h documents for
// these epilogues are enforced, so a caller that breaks one fails here as on
// a GPU:
//  - aux: ld a multiple of 8 and >= D's rows (CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD);
//  - the bias: "Bias vector elements are the same type as the elements of
//    output matrix (Dtype)" (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE; its
//    exceptions are integer and fp8 kernels, which this stand-in does not
//    serve), so BIAS_DATA_TYPE must be D's type or unset (-1);
//  - the bias gradient: "Bias gradient vector elements are the same type as
//    the output elements (Ctype)" (CUBLASLT_MATMUL_DESC_BIAS_POINTER).
#include <cublasLt.h>
#include <cuda_bf16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>

#include "emu_streams.h"

namespace {
thread_local bool t_running = false;  // inside the queued op of a cublasLtMatmul

struct Desc {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  int32_t ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t bias_type = -1;  // -1: D's type
  void* aux = nullptr;
  int64_t aux_ld = 0;
};
struct Layout {
  cudaDataType_t type = CUDA_R_32F;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
};

float ldv(const void* p, cudaDataType_t t, int64_t i) {
  return t == CUDA_R_32F ? static_cast<const float*>(p)[i] : __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}
void stv(void* p, cudaDataType_t t, int64_t i, float v) {
  if (t == CUDA_R_32F)
    static_cast<float*>(p)[i] = v;
  else
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v);
}

constexpr float kSqrt2OverPi = 0.79788456080286536f;
constexpr float kCubic = 0.044715f;
float gelu_tanh(float x) { return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x))); }
float dgelu_tanh(float x) {
  const float t = std::tanh(kSqrt2OverPi * (x + kCubic * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kCubic * x * x);
}

// The placeholder algorithm asks for a workspace, so the caller's handling
// of it (the size the heuristic returned, a device buffer) is exercised.
constexpr size_t kAlgoWorkspace = size_t{1} << 20;

}  // namespace

cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) {
  *h = reinterpret_cast<cublasLtHandle_t>(0x1);
  return CUBLAS_STATUS_SUCCESS;
}
const char* cublasLtGetStatusString(cublasStatus_t) { return "emu"; }

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* d, cublasComputeType_t compute, cudaDataType_t scale) {
  if (scale != CUDA_R_32F) return CUBLAS_STATUS_NOT_SUPPORTED;
  Desc* p = new Desc;
  p->compute = compute;
  *d = reinterpret_cast<cublasLtMatmulDesc_t>(p);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  delete reinterpret_cast<Desc*>(d);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t size) {
  Desc* p = reinterpret_cast<Desc*>(d);
  auto get = [&](auto& field) {
    if (size != sizeof(field)) return CUBLAS_STATUS_INVALID_VALUE;
    std::memcpy(&field, buf, size);
    return CUBLAS_STATUS_SUCCESS;
  };
  switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: return get(p->ta);
    case CUBLASLT_MATMUL_DESC_TRANSB: return get(p->tb);
    case CUBLASLT_MATMUL_DESC_EPILOGUE: return get(p->epilogue);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: return get(p->bias);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: return get(p->bias_type);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: return get(p->aux);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: return get(p->aux_ld);
    default: return CUBLAS_STATUS_NOT_SUPPORTED;
  }
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* l, cudaDataType type, uint64_t rows, uint64_t cols,
                                          int64_t ld) {
  if (ld < static_cast<int64_t>(rows)) return CUBLAS_STATUS_INVALID_VALUE;
  *l = reinterpret_cast<cublasLtMatrixLayout_t>(new Layout{type, rows, cols, ld});
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  delete reinterpret_cast<Layout*>(l);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* p) {
  *p = reinterpret_cast<cublasLtMatmulPreference_t>(0x1);
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    const void*, size_t) {
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t,
                                              cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* count) {
  if (requested < 1) return CUBLAS_STATUS_INVALID_VALUE;
  std::memset(&results[0], 0, sizeof(results[0]));
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].workspaceSize = kAlgoWorkspace;
  *count = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t adesc, const void* B, cublasLtMatrixLayout_t bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t cdesc, void* D,
                              cublasLtMatrixLayout_t ddesc, const cublasLtMatmulAlgo_t*, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  if (!workspace || workspace_bytes < kAlgoWorkspace) return CUBLAS_STATUS_INVALID_VALUE;
  const Desc& d = *reinterpret_cast<const Desc*>(desc);
  const Layout &la = *reinterpret_cast<const Layout*>(adesc), &lb = *reinterpret_cast<const Layout*>(bdesc);
  const Layout &lc = *reinterpret_cast<const Layout*>(cdesc), &ld = *reinterpret_cast<const Layout*>(ddesc);
  const bool ta = d.ta != CUBLAS_OP_N, tb = d.tb != CUBLAS_OP_N;
  const int64_t m = static_cast<int64_t>(ta ? la.cols : la.rows), k = static_cast<int64_t>(ta ? la.rows : la.cols);
  const int64_t kb = static_cast<int64_t>(tb ? lb.cols : lb.rows), n = static_cast<int64_t>(tb ? lb.rows : lb.cols);
  if (k != kb || static_cast<int64_t>(ld.rows) != m || static_cast<int64_t>(ld.cols) != n || lc.rows != ld.rows ||
      lc.cols != ld.cols || lc.type != ld.type)
    return CUBLAS_STATUS_INVALID_VALUE;
  const uint32_t ep = d.epilogue;
  const bool bias_add = ep == CUBLASLT_EPILOGUE_BIAS || ep == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  const bool uses_aux = ep == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || ep == CUBLASLT_EPILOGUE_DGELU;
  if (ep != CUBLASLT_EPILOGUE_DEFAULT && !bias_add && !uses_aux && ep != CUBLASLT_EPILOGUE_BGRADB)
    return CUBLAS_STATUS_NOT_SUPPORTED;
  const cudaDataType_t bias_type = d.bias_type < 0 ? ld.type : static_cast<cudaDataType_t>(d.bias_type);
  if (bias_add && (!d.bias || bias_type != ld.type)) return CUBLAS_STATUS_INVALID_VALUE;
  if (ep == CUBLASLT_EPILOGUE_BGRADB && (!d.bias || bias_type != lc.type)) return CUBLAS_STATUS_INVALID_VALUE;
  if (uses_aux && (!d.aux || d.aux_ld % 8 != 0 || d.aux_ld < m)) return CUBLAS_STATUS_INVALID_VALUE;
  const float al = *static_cast<const float*>(alpha), be = *static_cast<const float*>(beta);
  if (!t_running) {
    // Queued on `stream` (emu_streams.h) with this call's descriptors and
    // scalars, which cuBLASLt reads now (the caller sets the bias and aux
    // pointers on its plan per call); the queued op calls back in with
    // t_running set to compute.
    const Desc dc = d;
    const Layout lac = la, lbc = lb, lcc = lc, ldc = ld;
    vt_emu::submit(stream, [=] {
      Desc d2 = dc;
      Layout a2 = lac, b2 = lbc, c2 = lcc, d2l = ldc;
      const float al2 = al, be2 = be;
      t_running = true;
      cublasLtMatmul(nullptr, reinterpret_cast<cublasLtMatmulDesc_t>(&d2), &al2, A,
                     reinterpret_cast<cublasLtMatrixLayout_t>(&a2), B, reinterpret_cast<cublasLtMatrixLayout_t>(&b2),
                     &be2, C, reinterpret_cast<cublasLtMatrixLayout_t>(&c2), D,
                     reinterpret_cast<cublasLtMatrixLayout_t>(&d2l), nullptr, workspace, workspace_bytes, nullptr);
      t_running = false;
    });
    return CUBLAS_STATUS_SUCCESS;
  }
  auto a_at = [&](int64_t i, int64_t p) { return ta ? ldv(A, la.type, p + i * la.ld) : ldv(A, la.type, i + p * la.ld); };
  auto b_at = [&](int64_t p, int64_t j) { return tb ? ldv(B, lb.type, j + p * lb.ld) : ldv(B, lb.type, p + j * lb.ld); };
  if (ep == CUBLASLT_EPILOGUE_BGRADB) {  // before D is written: B may not alias D, but keep the order obvious
    for (int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p) s += b_at(p, j);
      stv(const_cast<void*>(d.bias), bias_type, j, static_cast<float>(s));
    }
  }
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double s = 0.0;
      for (int64_t p = 0; p < k; ++p) s += static_cast<double>(a_at(i, p)) * b_at(p, j);
      float v = static_cast<float>(al * s + (be == 0.0f ? 0.0 : be * ldv(C, lc.type, i + j * lc.ld)));
      if (bias_add) v += ldv(d.bias, bias_type, i);
      if (ep == CUBLASLT_EPILOGUE_GELU_AUX_BIAS) {
        stv(d.aux, ld.type, i + j * d.aux_ld, v);
        v = gelu_tanh(v);
      } else if (ep == CUBLASLT_EPILOGUE_DGELU) {
        v *= dgelu_tanh(ldv(d.aux, ld.type, i + j * d.aux_ld));
      }
      stv(D, ld.type, i + j * ld.ld, v);
    }
  return CUBLAS_STATUS_SUCCESS;
}
