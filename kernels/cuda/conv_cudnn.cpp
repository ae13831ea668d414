// cuDNN convolution forward (classic API); contract in
// kernels/cuda/conv_cudnn.h. Host code only (the kernels are cuDNN's, the
// epilogue is kernels/cuda/conv_epilogue.cu). In the emulator the cuDNN
// calls are served by tests/cuda/emu/cudnn_emu.cpp.
#if defined(VT_CUDNN_CONV)
#include "kernels/cuda/conv_cudnn.h"

#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/allocator.h"
#include "kernels/cuda/conv_epilogue.h"

namespace vt {
namespace cuda {

namespace {

constexpr size_t kMaxWorkspace = size_t{256} << 20;  // larger algorithms are skipped
constexpr const char* kOp = "cuda::conv2d_cudnn";

std::atomic<bool> g_on{true};
std::atomic<int64_t> g_fused{0}, g_unfused{0}, g_padded{0}, g_packed{0}, g_refused{0};

std::string shape_str(const Conv2dDesc& d) {
  return "x [" + std::to_string(d.n) + ", " + std::to_string(d.c) + ", " + std::to_string(d.h) + ", " +
         std::to_string(d.w) + "], w [" + std::to_string(d.o) + ", " + std::to_string(d.c / d.groups) + ", " +
         std::to_string(d.kh) + ", " + std::to_string(d.kw) + "], y [" + std::to_string(d.oh) + ", " +
         std::to_string(d.ow) + "], stride (" + std::to_string(d.sh) + ", " + std::to_string(d.sw) + "), pad (" +
         std::to_string(d.ph) + ", " + std::to_string(d.pw) + "), dilation (" + std::to_string(d.dh) + ", " +
         std::to_string(d.dw) + "), groups " + std::to_string(d.groups);
}

void check(cudnnStatus_t s, const char* call, const Conv2dDesc& d) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw std::runtime_error(std::string(kOp) + ": " + call + ": " + cudnnGetErrorString(s) + " (" + shape_str(d) +
                             ")");
}
void check_rt(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(kOp) + ": " + what + ": CUDA error: " + cudaGetErrorString(e));
}

cudnnMathType_t math_type(ConvMath m) {
  switch (m) {
    case ConvMath::Fp32: return CUDNN_FMA_MATH;  // no tensor cores, hence no TF32
    case ConvMath::Tf32: return CUDNN_DEFAULT_MATH;
    case ConvMath::Bf16: return CUDNN_TENSOR_OP_MATH;
  }
  return CUDNN_FMA_MATH;
}
// An algorithm the heuristic lists may run another math type than the
// descriptor's; for Fp32 only FMA kernels keep the features fp32-exact.
bool math_ok(ConvMath m, cudnnMathType_t got) { return m != ConvMath::Fp32 || got == CUDNN_FMA_MATH; }

cudnnDataType_t data_type(ConvMath m) { return m == ConvMath::Bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT; }
size_t elem_bytes(ConvMath m) { return m == ConvMath::Bf16 ? 2 : 4; }

bool fits_int(std::initializer_list<int64_t> v) {
  for (int64_t x : v)
    if (x < 0 || x > INT_MAX) return false;
  return true;
}

// Everything the descriptors and the chosen algorithm depend on.
struct PlanKey {
  int64_t n, c, h, w, o, kh, kw, oh, ow;
  int sh, sw, ph, pw, dh, dw, groups;
  int64_t xs[4], ys[4];
  ConvMath math;
  auto tie() const {
    return std::tie(n, c, h, w, o, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups, xs[0], xs[1], xs[2], xs[3], ys[0],
                    ys[1], ys[2], ys[3], math);
  }
  bool operator<(const PlanKey& k) const { return tie() < k.tie(); }
};

struct Algo {
  bool ok = false;
  cudnnConvolutionFwdAlgo_t algo{};
  cudnnMathType_t math{};
  size_t workspace = 0;
};

struct Plan {
  bool ok = false;  // false: no algorithm, kernels/conv.cpp runs the hand-written kernel
  bool fused_ok = true;  // false once the fused call answered NOT_SUPPORTED
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr, bd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  cudnnActivationDescriptor_t relu = nullptr, identity = nullptr;
  Algo main;      // the heuristic's first usable algorithm
  Algo precomp;   // IMPLICIT_PRECOMP_GEMM when usable (for IDENTITY)
  // Explicit padding: x (its first h_used rows / w_used columns, x_src) is
  // copied into the interior (x_dst) of a zeroed [n, c, hp, wp] buffer.
  bool pad = false;
  int64_t hp = 0, wp = 0, pad_offset = 0;
  cudnnTensorDescriptor_t x_src = nullptr, x_dst = nullptr;
  // Packed output: cuDNN writes a packed [n, o, oh, ow] buffer (yd), copied into y (y_user).
  bool packed = false;
  cudnnTensorDescriptor_t y_user = nullptr;
};

cudnnTensorDescriptor_t tensor(const Conv2dDesc& d, ConvMath m, int64_t n, int64_t c, int64_t h, int64_t w,
                               const int64_t* s) {
  cudnnTensorDescriptor_t t = nullptr;
  check(cudnnCreateTensorDescriptor(&t), "cudnnCreateTensorDescriptor", d);
  check(cudnnSetTensor4dDescriptorEx(t, data_type(m), static_cast<int>(n), static_cast<int>(c), static_cast<int>(h),
                                     static_cast<int>(w), static_cast<int>(s[0]), static_cast<int>(s[1]),
                                     static_cast<int>(s[2]), static_cast<int>(s[3])),
        "cudnnSetTensor4dDescriptorEx", d);
  return t;
}
cudnnTensorDescriptor_t packed_tensor(const Conv2dDesc& d, ConvMath m, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t s[4] = {c * h * w, h * w, w, 1};
  return tensor(d, m, n, c, h, w, s);
}

// The heuristic's list: the first usable algorithm, and IMPLICIT_PRECOMP_GEMM if usable.
void choose(cudnnHandle_t h, Plan& p, const Conv2dDesc& d, ConvMath m) {
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  int returned = 0;
  check(cudnnGetConvolutionForwardAlgorithm_v7(h, p.xd, p.wd, p.cd, p.yd, static_cast<int>(perf.size()), &returned,
                                               perf.data()),
        "cudnnGetConvolutionForwardAlgorithm_v7", d);
  p.main = Algo{}, p.precomp = Algo{};
  for (int i = 0; i < returned; ++i) {
    const auto& r = perf[i];
    if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxWorkspace || !math_ok(m, r.mathType)) continue;
    const Algo a{true, r.algo, r.mathType, r.memory};
    if (!p.main.ok) p.main = a;
    if (!p.precomp.ok && r.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) p.precomp = a;
  }
}

Plan build(cudnnHandle_t h, const Conv2dDesc& d, ConvMath m) {
  Plan p;
  const int64_t cg = d.c / d.groups;
  // Input rows / columns the output reads, padding included.
  const int64_t need_h = (d.oh - 1) * d.sh + d.dh * (d.kh - 1) + 1, need_w = (d.ow - 1) * d.sw + d.dw * (d.kw - 1) + 1;
  // cuDNN pads ph rows on top and bottom; its output size is then
  // floor((h + 2 ph - dh (kh - 1) - 1) / sh) + 1, and its rows are ours when
  // that is oh (the top padding, which fixes every row, is the same).
  const bool sym = (d.h + 2 * d.ph - d.dh * (d.kh - 1) - 1) / d.sh + 1 == d.oh &&
                   (d.w + 2 * d.pw - d.dw * (d.kw - 1) - 1) / d.sw + 1 == d.ow &&
                   d.h + 2 * d.ph >= d.dh * (d.kh - 1) + 1 && d.w + 2 * d.pw >= d.dw * (d.kw - 1) + 1;
  p.pad = !sym;
  const int64_t h_used = std::min<int64_t>(d.h, need_h - d.ph), w_used = std::min<int64_t>(d.w, need_w - d.pw);
  p.hp = need_h, p.wp = need_w;
  if (!fits_int({d.n, d.c, d.h, d.w, d.o, d.kh, d.kw, d.oh, d.ow, d.x_strides[0], d.x_strides[1], d.x_strides[2],
                 d.y_strides[0], d.y_strides[1], d.y_strides[2], d.c * p.hp * p.wp, d.o * d.oh * d.ow}))
    return p;  // past cuDNN's int descriptors: refused
  check(cudnnCreateFilterDescriptor(&p.wd), "cudnnCreateFilterDescriptor", d);
  check(cudnnSetFilter4dDescriptor(p.wd, data_type(m), CUDNN_TENSOR_NCHW, static_cast<int>(d.o), static_cast<int>(cg),
                                   static_cast<int>(d.kh), static_cast<int>(d.kw)),
        "cudnnSetFilter4dDescriptor", d);
  check(cudnnCreateConvolutionDescriptor(&p.cd), "cudnnCreateConvolutionDescriptor", d);
  check(cudnnSetConvolution2dDescriptor(p.cd, p.pad ? 0 : d.ph, p.pad ? 0 : d.pw, d.sh, d.sw, d.dh, d.dw,
                                        CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
        "cudnnSetConvolution2dDescriptor", d);
  check(cudnnSetConvolutionGroupCount(p.cd, d.groups), "cudnnSetConvolutionGroupCount", d);
  check(cudnnSetConvolutionMathType(p.cd, math_type(m)), "cudnnSetConvolutionMathType", d);
  if (p.pad) {
    p.xd = packed_tensor(d, m, d.n, d.c, p.hp, p.wp);
    p.x_src = tensor(d, m, d.n, d.c, h_used, w_used, d.x_strides);
    const int64_t s[4] = {d.c * p.hp * p.wp, p.hp * p.wp, p.wp, 1};
    p.x_dst = tensor(d, m, d.n, d.c, h_used, w_used, s);
    p.pad_offset = d.ph * p.wp + d.pw;
  } else {
    p.xd = tensor(d, m, d.n, d.c, d.h, d.w, d.x_strides);
  }
  p.yd = tensor(d, m, d.n, d.o, d.oh, d.ow, d.y_strides);
  choose(h, p, d, m);
  if (!p.main.ok) {  // none for the strided y: a packed output, copied
    p.y_user = p.yd;
    p.yd = packed_tensor(d, m, d.n, d.o, d.oh, d.ow);
    choose(h, p, d, m);
    p.packed = p.main.ok;
  }
  if (!p.main.ok) return p;
  p.ok = true;
  if (m != ConvMath::Bf16) {
    check(cudnnCreateTensorDescriptor(&p.bd), "cudnnCreateTensorDescriptor", d);
    check(cudnnSetTensor4dDescriptor(p.bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, static_cast<int>(d.o), 1, 1),
          "cudnnSetTensor4dDescriptor", d);
    check(cudnnCreateActivationDescriptor(&p.relu), "cudnnCreateActivationDescriptor", d);
    check(cudnnSetActivationDescriptor(p.relu, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor", d);
    check(cudnnCreateActivationDescriptor(&p.identity), "cudnnCreateActivationDescriptor", d);
    check(cudnnSetActivationDescriptor(p.identity, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0),
          "cudnnSetActivationDescriptor", d);
  }
  return p;
}

// Handles (and their plans) per (host thread, device), as kernels/cuda/matmul_lt.cpp:
// a handle is not safe to share between threads issuing work concurrently.
// Never destroyed: destroying at thread exit can race the CUDA runtime's teardown.
struct DeviceState {
  int device = 0;
  cudnnHandle_t handle = nullptr;
  std::map<PlanKey, Plan> plans;
};

DeviceState& state_for_current_device(const Conv2dDesc& d) {
  thread_local std::map<int, DeviceState> states;
  int dev = 0;
  check_rt(cudaGetDevice(&dev), "cudaGetDevice");
  DeviceState& s = states[dev];
  if (!s.handle) {
    s.device = dev;
    check(cudnnCreate(&s.handle), "cudnnCreate", d);
  }
  return s;
}

// Scratch blocks (workspace, padded input, packed output) come from vt's
// caching allocator on the call's stream (core/allocator.h CudaScratch).
using Scratch = CudaScratch;

}  // namespace

bool conv2d_cudnn(const Conv2dDesc& d, const void* x, const void* w, const float* b, void* y, ConvMath math,
                  cudaStream_t stream) {
  if (d.n * d.oh * d.ow == 0 || d.o == 0) return true;
  DeviceState& s = state_for_current_device(d);
  PlanKey key{d.n, d.c, d.h, d.w, d.o, d.kh, d.kw, d.oh, d.ow, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, d.groups,
              {}, {}, math};
  for (int i = 0; i < 4; ++i) key.xs[i] = d.x_strides[i], key.ys[i] = d.y_strides[i];
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, build(s.handle, d, math)).first;
  Plan& p = it->second;
  if (!p.ok) {
    ++g_refused;
    return false;
  }
  // 0 is the compute stream of the op library (the kernels' default, per thread).
  check(cudnnSetStream(s.handle, stream ? stream : cudaStreamPerThread), "cudnnSetStream", d);
  const float one = 1.0f, zero = 0.0f;
  const size_t es = elem_bytes(math);

  const void* xin = x;
  Scratch padded(p.pad ? static_cast<size_t>(d.n * d.c * p.hp * p.wp) * es : 0, s.device, stream);
  if (p.pad) {
    check_rt(cudaMemsetAsync(padded.get(), 0, static_cast<size_t>(d.n * d.c * p.hp * p.wp) * es,
                             stream ? stream : cudaStreamPerThread),
             "cudaMemsetAsync");
    check(cudnnTransformTensor(s.handle, &one, p.x_src, x, &zero, p.x_dst,
                               static_cast<char*>(padded.get()) + p.pad_offset * static_cast<int64_t>(es)),
          "cudnnTransformTensor (padding copy)", d);
    xin = padded.get();
    ++g_padded;
  }
  Scratch out(p.packed ? static_cast<size_t>(d.n * d.o * d.oh * d.ow) * es : 0, s.device, stream);
  void* yout = p.packed ? out.get() : y;

  const bool epilogue = b || d.relu;
  bool done = false;
  if (epilogue && math != ConvMath::Bf16 && p.fused_ok && (d.relu || p.precomp.ok)) {
    // IDENTITY only with IMPLICIT_PRECOMP_GEMM (cuDNN API reference, cudnnActivationMode_t).
    const Algo& a = d.relu ? p.main : p.precomp;
    check(cudnnSetConvolutionMathType(p.cd, a.math), "cudnnSetConvolutionMathType", d);
    Scratch ws(a.workspace, s.device, stream);
    Scratch zero_bias(b ? 0 : static_cast<size_t>(d.o) * sizeof(float), s.device, stream);
    if (!b)
      check_rt(cudaMemsetAsync(zero_bias.get(), 0, static_cast<size_t>(d.o) * sizeof(float),
                               stream ? stream : cudaStreamPerThread),
               "cudaMemsetAsync");
    const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
        s.handle, &one, p.xd, xin, p.wd, w, p.cd, a.algo, ws.get(), a.workspace, &zero, p.yd, yout, p.bd,
        b ? static_cast<const void*>(b) : zero_bias.get(), d.relu ? p.relu : p.identity, p.yd, yout);
    if (st == CUDNN_STATUS_NOT_SUPPORTED) {
      p.fused_ok = false;  // remembered: the separate epilogue from now on
    } else {
      check(st, "cudnnConvolutionBiasActivationForward", d);
      done = true;
      ++g_fused;
    }
  }
  if (!done) {
    check(cudnnSetConvolutionMathType(p.cd, p.main.math), "cudnnSetConvolutionMathType", d);
    Scratch ws(p.main.workspace, s.device, stream);
    check(cudnnConvolutionForward(s.handle, &one, p.xd, xin, p.wd, w, p.cd, p.main.algo, ws.get(), p.main.workspace,
                                  &zero, p.yd, yout),
          "cudnnConvolutionForward", d);
  }
  if (p.packed) {
    check(cudnnTransformTensor(s.handle, &one, p.yd, yout, &zero, p.y_user, y), "cudnnTransformTensor (output copy)",
          d);
    ++g_packed;
  }
  if (!done && epilogue) {
    conv_bias_relu(y, math == ConvMath::Bf16 ? DType::BF16 : DType::F32, d.y_strides, d.n, d.o, d.oh, d.ow, b, d.relu,
                   stream);
    ++g_unfused;
  }
  return true;
}

void set_conv_cudnn(bool on) { g_on = on; }
bool conv_cudnn() { return g_on; }

CudnnConvCounts cudnn_conv_counts() {
  CudnnConvCounts c;
  c.fused = g_fused, c.unfused = g_unfused, c.padded = g_padded, c.packed_out = g_packed, c.refused = g_refused;
  return c;
}

}  // namespace cuda
}  // namespace vt
#endif  // VT_CUDNN_CONV
