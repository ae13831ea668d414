// Host stand-in for the cuDNN calls of kernels/cuda/conv_cudnn.cpp (the
// emulator only, built when cudnn.h is found): the classic-API descriptors
// as host structs behind the opaque pointers, and the convolution computed
// on the host from its definition (cross-correlation, zero padding, groups,
// stride, dilation), accumulated in double:
//   cudnnConvolutionForward                y = alpha conv(x, w) + beta y
//   cudnnConvolutionBiasActivationForward  y = act(alpha1 conv(x, w) + alpha2 z + bias)
//   cudnnTransformTensor                   y = alpha x + beta y   (any strides)
// (y, z are not read when beta / alpha2 is 0, as cuDNN's documentation
// says of beta.) Precision follows the data type and the math type:
// CUDNN_DATA_FLOAT with CUDNN_FMA_MATH is fp32 (products of the fp32
// inputs, one rounding of the sum); CUDNN_DATA_FLOAT with another math type
// rounds x and w to TF32 (10 mantissa bits, nearest even) first, as tensor
// cores may from cuDNN 8 on (CUDNN_DEFAULT_MATH permits TF32 on sm_80+);
// CUDNN_DATA_BFLOAT16 reads and writes bf16.
//
// The heuristic (cudnnGetConvolutionForwardAlgorithm_v7) lists
// IMPLICIT_GEMM (no workspace), then IMPLICIT_PRECOMP_GEMM (1 MiB
// workspace, so the caller's workspace handling runs), both with the
// descriptor's math type; a call with less workspace than its algorithm
// asks fails (CUDNN_STATUS_BAD_PARAM here; the status real cuDNN gives is
// not what the caller relies on: any failure throws).
//
// Refused as cuDNN documents it:
//  - CUDNN_ACTIVATION_IDENTITY in cudnnConvolutionBiasActivationForward with
//    another algorithm than CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM:
//    "The cudnnConvolutionBiasActivationForward() function must use
//    CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM" (cuDNN API reference,
//    cudnnActivationMode_t, CUDNN_ACTIVATION_IDENTITY) -> NOT_SUPPORTED.
// Refused because this stand-in does not implement them (not a claim about
// cuDNN): fused activation modes other than RELU and IDENTITY, ReLU with
// NaN propagation or a nonzero coefficient, tensor descriptors in other
// data types than FLOAT / BFLOAT16, bias in another type than FLOAT
// -> NOT_SUPPORTED.
// Refused because the call is inconsistent (BAD_PARAM; the checks any
// implementation must make to compute at all): x and y of other data types
// than w, x's channels != the filter's C/G times the group count, output
// channels not a multiple of the group count, y's dims not the
// convolution's output dims, a bias that is not [1, O, 1, 1], z's dims not
// y's, non-positive stride / dilation, negative padding, dims < 1.
//  - a tensor past 2 Giga-elements: "The total size of a tensor including
//    the potential padding between dimensions is limited to 2 Giga-elements
//    of type datatype", cudnnSetTensor4dDescriptor(Ex) returning
//    CUDNN_STATUS_NOT_SUPPORTED when "the total size of the tensor
//    descriptor exceeds the maximum limit of 2 Giga-elements" (cuDNN API
//    reference); observed at 2^31 elements exactly (microsoft/onnxruntime
//    #15715: [32, 256, 512, 512] refused by cudnnSetTensorNdDescriptor,
//    batch 31 taken; pytorch/pytorch#22496, "a documented restriction").
//    Here: a descriptor whose span (1 + sum (dim - 1) |stride|, at least
//    its element count) exceeds 2^31 - 1 -> NOT_SUPPORTED from
//    cudnnSetTensor4dDescriptor(Ex), and from the execution calls
//    (convolutions, cudnnTransformTensor) for a descriptor past the limit
//    in force when they are called.
// Not enforced because no rule could be read for it where this was written
// (the stored cuDNN pages give only their openings): limits on strides
// (channel slices, channels-last), alignment, the bias type for bf16 data
// (conv_cudnn.cpp does not fuse bf16).
//
// Test knobs (vt_emu::cudnn_emu_*): refuse every fused call with
// NOT_SUPPORTED (the caller's fallback), or offer no algorithm for a y that
// is not packed (the caller's packed-output copy). Environment knobs, read
// at every call (a value they do not take aborts, naming it):
//   VT_EMU_CUDNN_MAX_ELEMENTS=N  the size limit above lowered to N (1 to
//       2^31 - 1), so that tests cut small batches.
//   VT_EMU_CUDNN_EXEC_NOT_SUPPORTED=LIST  cudnnConvolutionForward answers
//       CUDNN_STATUS_NOT_SUPPORTED, writing nothing, for the listed cases,
//       comma-separated: an algorithm's cudnnConvolutionFwdAlgo_t value
//       (0 IMPLICIT_GEMM, 1 IMPLICIT_PRECOMP_GEMM), `strided` (x or y not
//       packed, any algorithm), `all`. Real cuDNN does this for algorithms
//       its heuristic listed (PyTorch's AlgoIterator::try_all, Conv_v7.cpp,
//       tries the next algorithm on a cuDNN error), and PyTorch's message
//       for the status names non-contiguous input as a cause ("This error
//       may appear if you passed in a non-contiguous input",
//       pytorch/pytorch#22496, #51776).
//   VT_EMU_CUDNN_OFFER_ALLOW_CONVERSION=1  the heuristic, for a descriptor
//       whose math type is not CUDNN_FMA_MATH, lists both algorithms first
//       with mathType CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (the perf
//       entries carry the math type each algorithm runs, which may differ
//       from the descriptor's: PyTorch's Note [behavior of cudnnFind and
//       cudnnGet]); a convolution run with that math type rounds x and w to
//       fp16 first, the down conversion it "will actively perform ... in
//       order to utilize Tensor Cores" (cudnnMathType_t; fp32 to fp16:
//       tensorflow/tensorflow#36036), so values past 65504 become inf.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cudnn.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "emu_streams.h"
namespace vt_emu {

bool g_cudnn_refuse_fused = false, g_cudnn_no_strided_y = false;
void cudnn_emu_refuse_fused(bool on) { g_cudnn_refuse_fused = on; }
void cudnn_emu_no_strided_y(bool on) { g_cudnn_no_strided_y = on; }
}  // namespace vt_emu

struct cudnnContext {
  cudaStream_t stream = nullptr;
};
struct cudnnTensorStruct {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int dim[4] = {0, 0, 0, 0};
  int64_t stride[4] = {0, 0, 0, 0};
};
struct cudnnFilterStruct {
  cudnnDataType_t type = CUDNN_DATA_FLOAT;
  int k = 0, c = 0, h = 0, w = 0;
};
struct cudnnConvolutionStruct {
  int ph = 0, pw = 0, sh = 1, sw = 1, dh = 1, dw = 1, groups = 1;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
};
struct cudnnActivationStruct {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  double coef = 0;
};

namespace {

constexpr size_t kPrecompWorkspace = size_t{1} << 20;
constexpr int64_t kMaxElements = (int64_t{1} << 31) - 1;  // 2 Giga-elements (header)

[[noreturn]] void bad_knob(const char* name, const char* value, const char* expected) {
  std::fprintf(stderr, "cudnn_emu: %s='%s': %s\n", name, value, expected);
  std::abort();
}

// VT_EMU_CUDNN_MAX_ELEMENTS, else cuDNN's limit.
int64_t max_elements() {
  const char* e = std::getenv("VT_EMU_CUDNN_MAX_ELEMENTS");
  if (!e || !*e) return kMaxElements;
  char* end = nullptr;
  const long long v = std::strtoll(e, &end, 10);
  if (*end || v < 1 || v > kMaxElements)
    bad_knob("VT_EMU_CUDNN_MAX_ELEMENTS", e, "expected an element count from 1 to 2147483647");
  return v;
}

// The size the limit applies to: the span, at least the element count.
int64_t size_of(const int64_t* dim, const int64_t* stride) {
  int64_t numel = 1, span = 1;
  for (int i = 0; i < 4; ++i) numel *= dim[i], span += (dim[i] - 1) * (stride[i] < 0 ? -stride[i] : stride[i]);
  return numel > span ? numel : span;
}

bool offer_allow_conversion() {
  const char* e = std::getenv("VT_EMU_CUDNN_OFFER_ALLOW_CONVERSION");
  if (!e || !*e || std::strcmp(e, "0") == 0) return false;
  if (std::strcmp(e, "1") != 0) bad_knob("VT_EMU_CUDNN_OFFER_ALLOW_CONVERSION", e, "expected 0 or 1");
  return true;
}

// Queues the computation on the handle's stream (cudnnSetStream), to run
// when the device reaches it (or records it into an open capture); the
// descriptors and host scalars are read at the call, as cuDNN does.
void run(cudnnHandle_t h, std::function<void()> op) { vt_emu::submit(h ? h->stream : nullptr, std::move(op)); }

bool supported_type(cudnnDataType_t t) { return t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_BFLOAT16; }

double load(const void* p, cudnnDataType_t t, int64_t i) {
  return t == CUDNN_DATA_FLOAT ? static_cast<const float*>(p)[i]
                               : __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}
void store(void* p, cudnnDataType_t t, int64_t i, double v) {
  if (t == CUDNN_DATA_FLOAT)
    static_cast<float*>(p)[i] = static_cast<float>(v);
  else
    static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
}
// fp32 -> TF32: keep 10 mantissa bits, round to nearest even (finite values).
float tf32(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return v;
  u += 0xfffu + ((u >> 13) & 1u);
  u &= ~0x1fffu;
  std::memcpy(&v, &u, 4);
  return v;
}
int64_t at(const cudnnTensorStruct* t, int64_t n, int64_t c, int64_t h, int64_t w) {
  return n * t->stride[0] + c * t->stride[1] + h * t->stride[2] + w * t->stride[3];
}
bool packed(const cudnnTensorStruct* t) {
  return t->stride[3] == 1 && t->stride[2] == t->dim[3] && t->stride[1] == int64_t{t->dim[2]} * t->dim[3] &&
         t->stride[0] == int64_t{t->dim[1]} * t->dim[2] * t->dim[3];
}

int out_dim(int in, int pad, int k, int stride, int dil) { return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1; }

bool too_large(const cudnnTensorStruct* t) {
  const int64_t dim[4] = {t->dim[0], t->dim[1], t->dim[2], t->dim[3]};
  return size_of(dim, t->stride) > max_elements();
}

// VT_EMU_CUDNN_EXEC_NOT_SUPPORTED (header): whether cudnnConvolutionForward refuses this call.
bool exec_refused(cudnnConvolutionFwdAlgo_t algo, const cudnnTensorStruct* x, const cudnnTensorStruct* y) {
  const char* e = std::getenv("VT_EMU_CUDNN_EXEC_NOT_SUPPORTED");
  if (!e || !*e) return false;
  bool refused = false;
  const std::string list = e;
  size_t at0 = 0;
  for (;;) {
    const size_t comma = list.find(',', at0);
    const std::string tok = list.substr(at0, comma == std::string::npos ? std::string::npos : comma - at0);
    if (tok == "all") {
      refused = true;
    } else if (tok == "strided") {
      refused = refused || !packed(x) || !packed(y);
    } else if (!tok.empty() && tok.size() <= 2 && tok.find_first_not_of("0123456789") == std::string::npos &&
               std::stoi(tok) < CUDNN_CONVOLUTION_FWD_ALGO_COUNT) {
      refused = refused || std::stoi(tok) == static_cast<int>(algo);
    } else {
      bad_knob("VT_EMU_CUDNN_EXEC_NOT_SUPPORTED", e,
               "expected a comma-separated list of algorithm numbers (0 to 7), 'strided' or 'all'");
    }
    if (comma == std::string::npos) break;
    at0 = comma + 1;
  }
  return refused;
}

// The consistency checks (header): BAD_PARAM when x, w, conv and y disagree.
cudnnStatus_t check_conv(const cudnnTensorStruct* x, const cudnnFilterStruct* w, const cudnnConvolutionStruct* c,
                         const cudnnTensorStruct* y) {
  if (!x || !w || !c || !y) return CUDNN_STATUS_BAD_PARAM;
  if (x->type != w->type || y->type != w->type) return CUDNN_STATUS_BAD_PARAM;
  if (x->dim[1] != w->c * c->groups || w->k % c->groups != 0) return CUDNN_STATUS_BAD_PARAM;
  if (x->dim[2] + 2 * c->ph < c->dh * (w->h - 1) + 1 || x->dim[3] + 2 * c->pw < c->dw * (w->w - 1) + 1)
    return CUDNN_STATUS_BAD_PARAM;
  if (y->dim[0] != x->dim[0] || y->dim[1] != w->k || y->dim[2] != out_dim(x->dim[2], c->ph, w->h, c->sh, c->dh) ||
      y->dim[3] != out_dim(x->dim[3], c->pw, w->w, c->sw, c->dw))
    return CUDNN_STATUS_BAD_PARAM;
  return CUDNN_STATUS_SUCCESS;
}

// conv(x, w) at every output element, in y's index order, as doubles.
std::vector<double> convolve(const cudnnTensorStruct* xd, const void* x, const cudnnFilterStruct* wd, const void* w,
                             const cudnnConvolutionStruct* cd) {
  // ALLOW_CONVERSION: down to fp16 (header); else fp32 data off FMA_MATH: TF32.
  const bool to_fp16 = cd->math == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
  const bool round_tf32 = !to_fp16 && xd->type == CUDNN_DATA_FLOAT && cd->math != CUDNN_FMA_MATH;
  auto in = [&](const void* p, int64_t i) {
    const double v = load(p, xd->type, i);
    if (to_fp16) return static_cast<double>(__half2float(__float2half_rn(static_cast<float>(v))));
    return round_tf32 ? static_cast<double>(tf32(static_cast<float>(v))) : v;
  };
  const int N = xd->dim[0], H = xd->dim[2], W = xd->dim[3];
  const int O = wd->k, CG = wd->c, KH = wd->h, KW = wd->w, OG = O / cd->groups;
  const int OH = out_dim(H, cd->ph, KH, cd->sh, cd->dh), OW = out_dim(W, cd->pw, KW, cd->sw, cd->dw);
  std::vector<double> out(static_cast<size_t>(N) * O * OH * OW);
#pragma omp parallel for collapse(2)
  for (int n = 0; n < N; ++n)
    for (int o = 0; o < O; ++o) {
      const int g = o / OG;
      for (int i = 0; i < OH; ++i)
        for (int j = 0; j < OW; ++j) {
          double acc = 0;
          for (int c = 0; c < CG; ++c)
            for (int a = 0; a < KH; ++a) {
              const int ih = i * cd->sh - cd->ph + a * cd->dh;
              if (ih < 0 || ih >= H) continue;
              for (int b = 0; b < KW; ++b) {
                const int iw = j * cd->sw - cd->pw + b * cd->dw;
                if (iw < 0 || iw >= W) continue;
                acc += in(x, at(xd, n, g * CG + c, ih, iw)) *
                       in(w, ((static_cast<int64_t>(o) * CG + c) * KH + a) * KW + b);
              }
            }
          out[((static_cast<size_t>(n) * O + o) * OH + i) * OW + j] = acc;
        }
    }
  return out;
}

cudnnStatus_t workspace_ok(cudnnConvolutionFwdAlgo_t algo, const void* ws, size_t bytes) {
  if (algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM && (!ws || bytes < kPrecompWorkspace))
    return CUDNN_STATUS_BAD_PARAM;
  if (algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED;  // the stand-in offers only these two
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cudnnStatus_t cudnnCreate(cudnnHandle_t* h) {
  *h = new cudnnContext;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroy(cudnnHandle_t h) {
  delete h;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s) {
  h->stream = s;
  return CUDNN_STATUS_SUCCESS;
}
const char* cudnnGetErrorString(cudnnStatus_t s) {
  switch (s) {
    case CUDNN_STATUS_SUCCESS: return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_BAD_PARAM: return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_NOT_SUPPORTED: return "CUDNN_STATUS_NOT_SUPPORTED";
    default: return "CUDNN_STATUS (emulated)";
  }
}

cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* t) {
  *t = new cudnnTensorStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t t) {
  delete t;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t t, cudnnDataType_t type, int n, int c, int h, int w,
                                           int ns, int cs, int hs, int ws) {
  if (n < 1 || c < 1 || h < 1 || w < 1) return CUDNN_STATUS_BAD_PARAM;
  if (!supported_type(type)) return CUDNN_STATUS_NOT_SUPPORTED;
  const int64_t dim[4] = {n, c, h, w}, stride[4] = {ns, cs, hs, ws};
  if (size_of(dim, stride) > max_elements()) return CUDNN_STATUS_NOT_SUPPORTED;  // the size limit (header)
  t->type = type;
  t->dim[0] = n, t->dim[1] = c, t->dim[2] = h, t->dim[3] = w;
  t->stride[0] = ns, t->stride[1] = cs, t->stride[2] = hs, t->stride[3] = ws;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t t, cudnnTensorFormat_t format, cudnnDataType_t type,
                                         int n, int c, int h, int w) {
  if (format != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;  // the stand-in's limit
  if (n < 1 || c < 1 || h < 1 || w < 1) return CUDNN_STATUS_BAD_PARAM;
  // An image past an int is past the size limit too (its stride would overflow).
  if (int64_t{c} * h * w > kMaxElements) return CUDNN_STATUS_NOT_SUPPORTED;
  return cudnnSetTensor4dDescriptorEx(t, type, n, c, h, w, c * h * w, h * w, w, 1);
}

cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* f) {
  *f = new cudnnFilterStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t f) {
  delete f;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t f, cudnnDataType_t type, cudnnTensorFormat_t format,
                                         int k, int c, int h, int w) {
  if (k < 1 || c < 1 || h < 1 || w < 1) return CUDNN_STATUS_BAD_PARAM;
  if (!supported_type(type) || format != CUDNN_TENSOR_NCHW) return CUDNN_STATUS_NOT_SUPPORTED;
  f->type = type, f->k = k, f->c = c, f->h = h, f->w = w;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* c) {
  *c = new cudnnConvolutionStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t c) {
  delete c;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t c, int ph, int pw, int sh, int sw, int dh,
                                              int dw, cudnnConvolutionMode_t mode, cudnnDataType_t compute) {
  if (ph < 0 || pw < 0 || sh < 1 || sw < 1 || dh < 1 || dw < 1) return CUDNN_STATUS_BAD_PARAM;
  if (mode != CUDNN_CROSS_CORRELATION || compute != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  c->ph = ph, c->pw = pw, c->sh = sh, c->sw = sw, c->dh = dh, c->dw = dw, c->compute = compute;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t c, int groups) {
  if (groups < 1) return CUDNN_STATUS_BAD_PARAM;
  c->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t c, cudnnMathType_t m) {
  c->math = m;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* a) {
  *a = new cudnnActivationStruct;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t a) {
  delete a;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t a, cudnnActivationMode_t mode,
                                           cudnnNanPropagation_t nan, double coef) {
  a->mode = mode, a->nan = nan, a->coef = coef;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, const cudnnTensorDescriptor_t x,
                                                     const cudnnFilterDescriptor_t w,
                                                     const cudnnConvolutionDescriptor_t c,
                                                     const cudnnTensorDescriptor_t y, const int requested,
                                                     int* returned, cudnnConvolutionFwdAlgoPerf_t* perf) {
  if (const cudnnStatus_t s = check_conv(x, w, c, y); s != CUDNN_STATUS_SUCCESS) return s;
  if (requested < 1) return CUDNN_STATUS_BAD_PARAM;
  const bool none = vt_emu::g_cudnn_no_strided_y && !packed(y);
  // With VT_EMU_CUDNN_OFFER_ALLOW_CONVERSION both algorithms come first with ALLOW_CONVERSION.
  const bool conv = c->math != CUDNN_FMA_MATH && offer_allow_conversion();
  const int count = conv ? 4 : 2;
  *returned = requested < count ? requested : count;
  for (int i = 0; i < *returned; ++i) {
    const int k = conv ? i % 2 : i;
    perf[i] = cudnnConvolutionFwdAlgoPerf_t{};
    perf[i].algo = k == 0 ? CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM : CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    perf[i].status = none ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
    perf[i].time = -1;
    perf[i].memory = k == 1 ? kPrecompWorkspace : 0;
    perf[i].determinism = CUDNN_DETERMINISTIC;
    perf[i].mathType = conv && i < 2 ? CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION : c->math;
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void* alpha, const cudnnTensorDescriptor_t xd,
                                      const void* x, const cudnnFilterDescriptor_t wd, const void* w,
                                      const cudnnConvolutionDescriptor_t cd, cudnnConvolutionFwdAlgo_t algo,
                                      void* ws, size_t ws_bytes, const void* beta, const cudnnTensorDescriptor_t yd,
                                      void* y) {
  if (const cudnnStatus_t s = check_conv(xd, wd, cd, yd); s != CUDNN_STATUS_SUCCESS) return s;
  if (too_large(xd) || too_large(yd)) return CUDNN_STATUS_NOT_SUPPORTED;  // the size limit (header)
  if (const cudnnStatus_t s = workspace_ok(algo, ws, ws_bytes); s != CUDNN_STATUS_SUCCESS) return s;
  if (exec_refused(algo, xd, yd)) return CUDNN_STATUS_NOT_SUPPORTED;  // VT_EMU_CUDNN_EXEC_NOT_SUPPORTED
  const double a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  const cudnnTensorStruct xs = *xd, ys = *yd;
  const cudnnFilterStruct wf = *wd;
  const cudnnConvolutionStruct cs = *cd;
  run(h, [=] {
    const std::vector<double> r = convolve(&xs, x, &wf, w, &cs);
    for (int n = 0; n < ys.dim[0]; ++n)
      for (int o = 0; o < ys.dim[1]; ++o)
        for (int i = 0; i < ys.dim[2]; ++i)
          for (int j = 0; j < ys.dim[3]; ++j) {
            const int64_t k = at(&ys, n, o, i, j);
            double v = a * r[((static_cast<size_t>(n) * ys.dim[1] + o) * ys.dim[2] + i) * ys.dim[3] + j];
            if (b != 0) v += b * load(y, ys.type, k);
            store(y, ys.type, k, v);
          }
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t h, const void* alpha1, const cudnnTensorDescriptor_t xd, const void* x,
    const cudnnFilterDescriptor_t wd, const void* w, const cudnnConvolutionDescriptor_t cd,
    cudnnConvolutionFwdAlgo_t algo, void* ws, size_t ws_bytes, const void* alpha2, const cudnnTensorDescriptor_t zd,
    const void* z, const cudnnTensorDescriptor_t bd, const void* bias, const cudnnActivationDescriptor_t ad,
    const cudnnTensorDescriptor_t yd, void* y) {
  if (vt_emu::g_cudnn_refuse_fused) return CUDNN_STATUS_NOT_SUPPORTED;
  if (const cudnnStatus_t s = check_conv(xd, wd, cd, yd); s != CUDNN_STATUS_SUCCESS) return s;
  if (too_large(xd) || too_large(yd) || (zd && too_large(zd))) return CUDNN_STATUS_NOT_SUPPORTED;
  if (!ad || !bd || !zd || !bias) return CUDNN_STATUS_BAD_PARAM;
  // Documented: IDENTITY only with IMPLICIT_PRECOMP_GEMM (header).
  if (ad->mode == CUDNN_ACTIVATION_IDENTITY && algo != CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM)
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (ad->mode != CUDNN_ACTIVATION_RELU && ad->mode != CUDNN_ACTIVATION_IDENTITY) return CUDNN_STATUS_NOT_SUPPORTED;
  if (ad->mode == CUDNN_ACTIVATION_RELU && (ad->nan != CUDNN_NOT_PROPAGATE_NAN || ad->coef != 0))
    return CUDNN_STATUS_NOT_SUPPORTED;
  if (bd->type != CUDNN_DATA_FLOAT) return CUDNN_STATUS_NOT_SUPPORTED;
  if (bd->dim[0] != 1 || bd->dim[1] != yd->dim[1] || bd->dim[2] != 1 || bd->dim[3] != 1) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < 4; ++i)
    if (zd->dim[i] != yd->dim[i]) return CUDNN_STATUS_BAD_PARAM;
  if (const cudnnStatus_t s = workspace_ok(algo, ws, ws_bytes); s != CUDNN_STATUS_SUCCESS) return s;
  const double a1 = *static_cast<const float*>(alpha1), a2 = *static_cast<const float*>(alpha2);
  const cudnnTensorStruct xs = *xd, ys = *yd, zs = *zd, bs = *bd;
  const cudnnFilterStruct wf = *wd;
  const cudnnConvolutionStruct cs = *cd;
  const bool relu = ad->mode == CUDNN_ACTIVATION_RELU;
  run(h, [=] {
    const std::vector<double> r = convolve(&xs, x, &wf, w, &cs);
    for (int n = 0; n < ys.dim[0]; ++n)
      for (int o = 0; o < ys.dim[1]; ++o)
        for (int i = 0; i < ys.dim[2]; ++i)
          for (int j = 0; j < ys.dim[3]; ++j) {
            // fp32 epilogue on the fp32 accumulator (the conv rounded once).
            float v = static_cast<float>(a1 * r[((static_cast<size_t>(n) * ys.dim[1] + o) * ys.dim[2] + i) *
                                                    ys.dim[3] + j]);
            if (a2 != 0) v += static_cast<float>(a2 * load(z, zs.type, at(&zs, n, o, i, j)));
            v += static_cast<float>(load(bias, bs.type, o * bs.stride[1]));
            if (relu) v = v > 0.f ? v : 0.f;
            store(y, ys.type, at(&ys, n, o, i, j), v);
          }
  });
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnTransformTensor(cudnnHandle_t h, const void* alpha, const cudnnTensorDescriptor_t xd, const void* x,
                                   const void* beta, const cudnnTensorDescriptor_t yd, void* y) {
  if (!xd || !yd) return CUDNN_STATUS_BAD_PARAM;
  for (int i = 0; i < 4; ++i)
    if (xd->dim[i] != yd->dim[i]) return CUDNN_STATUS_BAD_PARAM;
  if (too_large(xd) || too_large(yd)) return CUDNN_STATUS_NOT_SUPPORTED;
  const double a = *static_cast<const float*>(alpha), b = *static_cast<const float*>(beta);
  const cudnnTensorStruct xs = *xd, ys = *yd;
  run(h, [=] {
    for (int n = 0; n < xs.dim[0]; ++n)
      for (int c = 0; c < xs.dim[1]; ++c)
        for (int i = 0; i < xs.dim[2]; ++i)
          for (int j = 0; j < xs.dim[3]; ++j) {
            const int64_t k = at(&ys, n, c, i, j);
            double v = a * load(x, xs.type, at(&xs, n, c, i, j));
            if (b != 0) v += b * load(y, ys.type, k);
            store(y, ys.type, k, v);
          }
  });
  return CUDNN_STATUS_SUCCESS;
}

}  // extern "C"
