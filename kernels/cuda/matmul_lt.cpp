#include "kernels/cuda/matmul_lt.h"

#include <cublasLt.h>

#include <atomic>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "core/allocator.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/matmul.h"

namespace vt {
namespace cuda {

namespace {

constexpr size_t kWorkspaceBytes = size_t{32} << 20;  // the most an algorithm may use (cuBLASLt's advice for Hopper)

std::atomic<bool> g_lt_on{true};
std::atomic<int64_t> g_fused{0}, g_fallback{0};

void check_lt(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(std::string("cuda::lt_gemm: ") + what + ": cuBLASLt error: " + cublasLtGetStatusString(s));
}
void check_rt(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cuda::lt_gemm: ") + what + ": CUDA error: " + cudaGetErrorString(e));
}

cudaDataType_t lt_type(DType t) { return t == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F; }

cublasLtEpilogue_t lt_epilogue(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::GeluAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case LtEpilogue::DGelu: return CUBLASLT_EPILOGUE_DGELU;
    case LtEpilogue::BGradA: return CUBLASLT_EPILOGUE_BGRADB;  // our a is cuBLASLt's B (header)
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// Largest power of two (<= 256) dividing the address: cuBLASLt's kernels
// assume 256-byte aligned operands unless told otherwise, and views (a
// column block of qkv, a row offset) are less aligned.
int alignment(const void* p) {
  if (!p) return 256;
  const auto v = reinterpret_cast<uintptr_t>(p);
  int a = 1;
  while (a < 256 && (v % (2 * a)) == 0) a *= 2;
  return a;
}

// Everything the descriptors and the chosen algorithm depend on.
struct PlanKey {
  bool ta, tb, tf32;
  int64_t m, n, k, lda, ldb, ldc, ldaux;
  DType ab, ct;
  LtEpilogue ep;
  int align_a, align_b, align_c, align_bias, align_aux;
  bool beta_zero;
  auto tie() const {
    return std::tie(ta, tb, tf32, m, n, k, lda, ldb, ldc, ldaux, ab, ct, ep, align_a, align_b, align_c, align_bias,
                    align_aux, beta_zero);
  }
  bool operator<(const PlanKey& o) const { return tie() < o.tie(); }
};

struct Plan {
  bool ok = false;   // false: cuBLASLt has no algorithm; the caller falls back
  bool ran = false;  // a first run succeeded (a later failure is an error)
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;  // bytes the algorithm needs (<= kWorkspaceBytes)
};

// Handles are not safe to share between host threads issuing work
// concurrently, hence one (with its plans) per (thread, device), as for the
// cuBLAS handle. Never destroyed: destroying at thread exit can race the
// CUDA runtime's own teardown.
struct DeviceState {
  int device = 0;
  cublasLtHandle_t handle = nullptr;
  std::map<PlanKey, Plan> plans;
};

DeviceState& state_for_current_device() {
  thread_local std::map<int, DeviceState> states;
  int dev = 0;
  check_rt(cudaGetDevice(&dev), "cudaGetDevice");
  DeviceState& s = states[dev];
  if (!s.handle) {
    s.device = dev;
    check_lt(cublasLtCreate(&s.handle), "cublasLtCreate");
  }
  return s;
}

// The GEMM's workspace (the bytes its algorithm asks for, at most
// kWorkspaceBytes), from vt's caching allocator on the GEMM's stream (as
// kernels/cuda/common.cuh's Workspace): the calls of a step reuse cached
// blocks, two streams never share one while a GEMM runs, and it counts in
// the allocator's peak and is released with its cache.
using LtWorkspace = CudaScratch;

template <typename T>
void set_desc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr, const T& v, const char* what) {
  check_lt(cublasLtMatmulDescSetAttribute(d, attr, &v, sizeof(v)), what);
}

// Descriptors and the heuristic's first choice for a key (once per shape).
Plan make_plan(DeviceState& s, const PlanKey& key, const LtGemm& g) {
  Plan p;
  const cublasComputeType_t compute = key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  check_lt(cublasLtMatmulDescCreate(&p.desc, compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  // Column-major view: D^T [n, m] = op(b)^T [n, k] op(a)^T [k, m].
  const cublasOperation_t opa_lt = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;  // cuBLASLt's A is our b
  const cublasOperation_t opb_lt = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, opa_lt, "TRANSA");
  set_desc(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, opb_lt, "TRANSB");
  set_desc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(g.epilogue), "EPILOGUE");
  if (g.epilogue != LtEpilogue::DGelu) {
    // cublasLt.h, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: "Bias vector elements
    // are the same type as the elements of output matrix (Dtype)" (the
    // exceptions are integer and fp8 kernels); CUBLASLT_MATMUL_DESC_BIAS_POINTER:
    // "Bias gradient vector elements are the same type as the output
    // elements (Ctype)". lt_gemm passes a bias in c's dtype (a bf16 copy for
    // a bf16 c) and asks for a bias gradient only with an fp32 c.
    const int32_t bias_type = lt_type(g.c_type);
    set_desc(p.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bias_type, "BIAS_DATA_TYPE");
  }
  if (g.epilogue == LtEpilogue::GeluAuxBias || g.epilogue == LtEpilogue::DGelu) {
    set_desc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux, "EPILOGUE_AUX_POINTER");
    set_desc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, g.ldaux, "EPILOGUE_AUX_LD");
  }
  const cudaDataType_t tab = lt_type(g.ab), tc = lt_type(g.c_type);
  // Stored (column-major) shapes: our row-major [r, c] with row stride ld is [c, r] with ld.
  const uint64_t a_rows = g.trans_b ? g.k : g.n, a_cols = g.trans_b ? g.n : g.k;
  const uint64_t b_rows = g.trans_a ? g.m : g.k, b_cols = g.trans_a ? g.k : g.m;
  check_lt(cublasLtMatrixLayoutCreate(&p.la, tab, a_rows, a_cols, g.ldb), "layout A");
  check_lt(cublasLtMatrixLayoutCreate(&p.lb, tab, b_rows, b_cols, g.lda), "layout B");
  check_lt(cublasLtMatrixLayoutCreate(&p.lc, tc, g.n, g.m, g.ldc), "layout C");

  cublasLtMatmulPreference_t pref = nullptr;
  check_lt(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = kWorkspaceBytes;
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
           "MAX_WORKSPACE_BYTES");
  const uint32_t al_a = key.align_b, al_b = key.align_a, al_c = key.align_c;  // cuBLASLt's A is our b
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_a, sizeof(al_a)),
           "MIN_ALIGNMENT_A_BYTES");
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_b, sizeof(al_b)),
           "MIN_ALIGNMENT_B_BYTES");
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c, sizeof(al_c)),
           "MIN_ALIGNMENT_C_BYTES");
  check_lt(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c, sizeof(al_c)),
           "MIN_ALIGNMENT_D_BYTES");
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(s.handle, p.desc, p.la, p.lb, p.lc, p.lc, pref, 1, &result, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  p.ok = st == CUBLAS_STATUS_SUCCESS && found > 0 && result.state == CUBLAS_STATUS_SUCCESS;
  if (p.ok) {
    p.algo = result.algo;
    p.workspace = result.workspaceSize;
  }
  return p;
}

}  // namespace

void set_lt_epilogues(bool on) { g_lt_on = on; }
bool lt_epilogues() { return g_lt_on; }
LtCounts lt_counts() { return LtCounts{g_fused.load(), g_fallback.load()}; }

bool lt_gemm(const LtGemm& g, cudaStream_t stream) {
  auto fall_back = [] {
    ++g_fallback;
    return false;
  };
  if (g.ab != DType::F32 && g.ab != DType::BF16) return fall_back();
  if (g.c_type != DType::F32 && g.c_type != g.ab) return fall_back();
  if (g.m <= 0 || g.n <= 0 || g.k <= 0) return fall_back();  // degenerate: the cuBLAS path defines it
  if (g.alpha != 1.0f) return fall_back();
  const bool uses_aux = g.epilogue == LtEpilogue::GeluAuxBias || g.epilogue == LtEpilogue::DGelu;
  // Only the weight gradient accumulates (beta = 1); the other epilogues are
  // defined here for an overwritten output, the only use.
  if (g.epilogue != LtEpilogue::BGradA && g.beta != 0.0f) return fall_back();
  // The bias gradient is in c's type (cublasLt.h): only an fp32 c (the
  // weight gradient) gives the fp32 gradient the caller accumulates.
  if (g.epilogue == LtEpilogue::BGradA && g.c_type != DType::F32) return fall_back();
  if (uses_aux && (g.ldaux % 8 != 0 || g.ldaux < g.n)) return fall_back();
  if ((g.epilogue == LtEpilogue::Bias || g.epilogue == LtEpilogue::GeluAuxBias) && !g.bias)
    throw std::invalid_argument("cuda::lt_gemm: bias epilogue without a bias");
  if (g.epilogue == LtEpilogue::BGradA && !g.bgrad)
    throw std::invalid_argument("cuda::lt_gemm: BGradA epilogue without a bias-gradient buffer");
  if (uses_aux && !g.aux) throw std::invalid_argument("cuda::lt_gemm: GELU epilogue without an aux buffer");

  DeviceState& s = state_for_current_device();
  // A bf16 output takes a bf16 bias (cublasLt.h): the fp32 bias rounded into
  // scratch, as PyTorch's autocast hands F.linear a bf16 bias.
  const bool bias_in = g.epilogue == LtEpilogue::Bias || g.epilogue == LtEpilogue::GeluAuxBias;
  const LtWorkspace bias_copy(bias_in && g.c_type == DType::BF16 ? static_cast<size_t>(g.n) * 2 : 0, s.device,
                              stream);
  const void* bias_ptr = g.epilogue == LtEpilogue::BGradA ? static_cast<const void*>(g.bgrad)
                         : bias_copy.get()                ? bias_copy.get()
                                                          : static_cast<const void*>(g.bias);
  const PlanKey key{g.trans_a, g.trans_b, tf32() && g.ab == DType::F32, g.m, g.n, g.k, g.lda, g.ldb, g.ldc,
                    uses_aux ? g.ldaux : 0, g.ab, g.c_type, g.epilogue, alignment(g.a), alignment(g.b),
                    alignment(g.c), alignment(bias_ptr), alignment(uses_aux ? g.aux : nullptr), g.beta == 0.0f};
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, make_plan(s, key, g)).first;
  Plan& p = it->second;
  if (!p.ok) return fall_back();
  if (bias_copy.get()) convert(g.bias, DType::F32, bias_copy.get(), DType::BF16, g.n, stream);
  // The plan is this thread's, so setting this call's pointers on it is safe.
  if (bias_ptr) set_desc(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias_ptr, "BIAS_POINTER");
  if (uses_aux) set_desc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, g.aux, "EPILOGUE_AUX_POINTER");
  const LtWorkspace ws(p.workspace, s.device, stream);
  const cublasStatus_t st = cublasLtMatmul(s.handle, p.desc, &g.alpha, g.b, p.la, g.a, p.lb, &g.beta, g.c, p.lc,
                                           g.c, p.lc, &p.algo, ws.get(), p.workspace,
                                           stream ? stream : cudaStreamPerThread);  // 0: the compute stream (matmul.cu)
  if (st != CUBLAS_STATUS_SUCCESS) {
    // A configuration the heuristic offered but the library then refuses
    // (checked before launching anything) is a fallback, remembered; a
    // failure of a plan that ran before is a real error.
    if (!p.ran && (st == CUBLAS_STATUS_NOT_SUPPORTED || st == CUBLAS_STATUS_INVALID_VALUE)) {
      p.ok = false;
      return fall_back();
    }
    check_lt(st, "cublasLtMatmul");
  }
  p.ran = true;
  ++g_fused;
  return true;
}

}  // namespace cuda
}  // namespace vt
