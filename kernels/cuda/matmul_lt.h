// cuBLASLt GEMMs with fused epilogues behind kernels/matmul.h (the Linear
// layers and the MLP): the bias add, bias + GELU keeping the pre-activation,
// the GELU derivative and the bias gradient run inside the GEMM instead of
// as separate passes over the output (llm.c's matmul_cublaslt; NVIDIA's
// cuBLASLt reference, "cublasLtEpilogue_t").
//
// Row-major terms, as kernels/cuda/matmul.h: c[m, n] = alpha op(a) op(b)
// (+ beta c), a [m, k] or [k, m] (trans_a), b [k, n] or [n, k] (trans_b),
// leading dimensions in elements. cuBLASLt is column-major, so it sees
// C^T = op(b)^T op(a)^T: our b is its A, our a its B, and a row-major
// per-column vector (length n) is its per-row bias. Epilogues:
//   Bias         c = op(a) op(b) + bias[n]                       (CUBLASLT_EPILOGUE_BIAS)
//   GeluAuxBias  aux = op(a) op(b) + bias[n];  c = gelu_tanh(aux) (CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
//   DGelu        c = gelu_tanh'(aux) * op(a) op(b)               (CUBLASLT_EPILOGUE_DGELU)
//   BGradA       c = op(a) op(b) + beta c;
//                bgrad[m] = sum_k op(a)[m, k]  (OVERWRITTEN)     (CUBLASLT_EPILOGUE_BGRADB)
// cuBLASLt's GELU is the tanh approximation (nn.GELU(approximate="tanh")),
// so erf GELU is not an epilogue here (kernels/matmul.h says what runs).
// The epilogue works on the fp32 accumulator: with a BF16 c the bias is
// added (and GELU applied) in fp32 before the one rounding to bf16; aux is
// in c's dtype. The bias is in c's dtype as cublasLt.h requires
// (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: "the same type as the elements of
// output matrix (Dtype)"): the caller's fp32 bias is used as is for an F32 c
// and rounded to bf16 into scratch for a BF16 c (what PyTorch's autocast
// gives F.linear). The bias gradient is in c's type too (..._BIAS_POINTER):
// BGradA runs only with an F32 c (the fp32 weight gradient) and writes fp32.
// alpha must be 1, beta 0 except for BGradA (the weight gradient
// accumulates), aux's ld a multiple of 8 (cuBLASLt's rule).
//
// Dtypes: a, b in `ab` (F32 or BF16), c in c_type (F32; BF16 with BF16 ab),
// fp32 accumulation (TF32 for F32 operands when set_tf32 is on, as cuBLAS).
// Handle and plan cache per (host thread, device): the first call of a
// shape builds its descriptors and asks the heuristic once; later calls of
// that shape only set the bias/aux pointers and run. The workspace (what
// the chosen algorithm needs, at most 32 MiB) comes from the caching
// allocator on the call's stream, a cached block after the first step.
//
// lt_gemm returns false, having written none of the caller's buffers, when cuBLASLt offers no
// algorithm for the call (remembered per shape) or the call breaks a rule
// above that only the data decides (aux ld); the caller then runs the
// separate passes. Other failures throw std::runtime_error naming the status.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

enum class LtEpilogue { Bias, GeluAuxBias, DGelu, BGradA };

struct LtGemm {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f, beta = 0.0f;
  const void* a = nullptr;
  int64_t lda = 0;
  const void* b = nullptr;
  int64_t ldb = 0;
  void* c = nullptr;
  int64_t ldc = 0;
  DType ab = DType::F32, c_type = DType::F32;
  LtEpilogue epilogue = LtEpilogue::Bias;
  const float* bias = nullptr;  // Bias, GeluAuxBias: [n] fp32 (rounded to bf16 for a BF16 c)
  void* aux = nullptr;          // GeluAuxBias (written), DGelu (read): [m, n] in c_type, row stride ldaux
  int64_t ldaux = 0;
  float* bgrad = nullptr;       // BGradA: [m], overwritten
};

bool lt_gemm(const LtGemm& g, cudaStream_t stream = 0);

// Process-wide switch (default on): off makes kernels/matmul.cpp run the
// separate passes (cuBLAS GEMM, bias kernel, activation kernel, column sums);
// the benchmark compares the two, tests check they agree.
void set_lt_epilogues(bool on);
bool lt_epilogues();

// Counts since process start, for tests: GEMMs cuBLASLt ran with an
// epilogue, and epilogue requests that fell back (nothing launched).
struct LtCounts {
  int64_t fused = 0, fallback = 0;
};
LtCounts lt_counts();

}  // namespace cuda
}  // namespace vt
