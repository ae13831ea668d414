// cuDNN convolution forward (classic API); contract in
// kernels/cuda/conv_cudnn.h. Host code only (the kernels are cuDNN's, the
// epilogue is kernels/cuda/conv_epilogue.cu). In the emulator the cuDNN
// calls are served by tests/cuda/emu/cudnn_emu.cpp.
#if defined(VT_CUDNN_CONV)
#include "kernels/cuda/conv_cudnn.h"

#include <cudnn.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "core/allocator.h"
#include "kernels/conv_cudnn_split.h"
#include "kernels/cuda/conv_epilogue.h"

namespace vt {
namespace cuda {

namespace {

constexpr size_t kMaxWorkspace = size_t{256} << 20;  // larger algorithms are skipped
constexpr const char* kOp = "cuda::conv2d_cudnn";

std::atomic<bool> g_on{true};
std::atomic<int64_t> g_fused{0}, g_unfused{0}, g_padded{0}, g_packed{0}, g_refused{0}, g_split{0}, g_chunks{0},
    g_retried{0};

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
    case ConvMath::Tf32: return CUDNN_DEFAULT_MATH;  // documented as permitting TF32 (conv_cudnn.h)
    case ConvMath::Bf16: return CUDNN_TENSOR_OP_MATH;
  }
  return CUDNN_FMA_MATH;
}
// An algorithm the heuristic lists may run another math type than the
// descriptor's (cudnnConvolutionFwdAlgoPerf_t::mathType; PyTorch's Note
// [behavior of cudnnFind and cudnnGet]). Fp32: only FMA kernels keep the
// features fp32-exact. Tf32 and Bf16: anything but
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, which "will actively perform
// datatype down conversion on tensors in order to utilize Tensor Cores"
// (cudnnMathType_t) -- fp32 data to fp16 (tensorflow/tensorflow#36036),
// whose 5 exponent bits overflow past 65504: neither TF32 (fp32's range,
// 10 mantissa bits) nor bf16.
bool math_ok(ConvMath m, cudnnMathType_t got) {
  if (m == ConvMath::Fp32) return got == CUDNN_FMA_MATH;
  return got != CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

cudnnDataType_t data_type(ConvMath m) { return m == ConvMath::Bf16 ? CUDNN_DATA_BFLOAT16 : CUDNN_DATA_FLOAT; }
size_t elem_bytes(ConvMath m) { return m == ConvMath::Bf16 ? 2 : 4; }

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
  cudnnConvolutionFwdAlgo_t algo{};
  cudnnMathType_t math{};
  size_t workspace = 0;
};

// What building the plan of one call's shape came to: TooLarge when cuDNN
// refused a tensor descriptor (NOT_SUPPORTED: its size limit,
// kernels/conv_cudnn_split.h), and the batch is then cut finer.
enum class Built { Ok, NoAlgorithm, TooLarge };

struct Plan {
  Built built = Built::NoAlgorithm;
  bool ok = false;  // false: no algorithm (or every one refused), kernels/conv.cpp runs the hand-written kernel
  bool fused_ok = true;  // false once the fused call answered NOT_SUPPORTED
  cudnnTensorDescriptor_t xd = nullptr, yd = nullptr, bd = nullptr;
  cudnnFilterDescriptor_t wd = nullptr;
  cudnnConvolutionDescriptor_t cd = nullptr;
  cudnnActivationDescriptor_t relu = nullptr, identity = nullptr;
  // The heuristic's usable algorithms, in its order (the first is the one
  // run); one cuDNN refuses at execution is dropped, for the shape.
  std::vector<Algo> algos;
  // Explicit padding: x (its first h_used rows / w_used columns, x_src) is
  // copied into the interior (x_dst) of a zeroed [n, c, hp, wp] buffer.
  bool pad = false;
  int64_t hp = 0, wp = 0, pad_offset = 0;
  cudnnTensorDescriptor_t x_src = nullptr, x_dst = nullptr;
  // Packed output: cuDNN writes a packed [n, o, oh, ow] buffer (yd), copied into y (y_user).
  bool packed = false;
  cudnnTensorDescriptor_t y_user = nullptr;

  // IMPLICIT_PRECOMP_GEMM when usable (for IDENTITY), else null.
  const Algo* precomp() const {
    for (const Algo& a : algos)
      if (a.algo == CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM) return &a;
    return nullptr;
  }
};

// A tensor descriptor; null when cuDNN answers NOT_SUPPORTED, which
// cudnnSetTensor4dDescriptorEx documents for a tensor past its size limit.
cudnnTensorDescriptor_t tensor(const Conv2dDesc& d, ConvMath m, int64_t n, int64_t c, int64_t h, int64_t w,
                               const int64_t* s) {
  cudnnTensorDescriptor_t t = nullptr;
  check(cudnnCreateTensorDescriptor(&t), "cudnnCreateTensorDescriptor", d);
  const cudnnStatus_t st = cudnnSetTensor4dDescriptorEx(
      t, data_type(m), static_cast<int>(n), static_cast<int>(c), static_cast<int>(h), static_cast<int>(w),
      static_cast<int>(s[0]), static_cast<int>(s[1]), static_cast<int>(s[2]), static_cast<int>(s[3]));
  if (st == CUDNN_STATUS_NOT_SUPPORTED) {
    cudnnDestroyTensorDescriptor(t);
    return nullptr;
  }
  check(st, "cudnnSetTensor4dDescriptorEx", d);
  return t;
}
cudnnTensorDescriptor_t packed_tensor(const Conv2dDesc& d, ConvMath m, int64_t n, int64_t c, int64_t h, int64_t w) {
  const int64_t s[4] = {c * h * w, h * w, w, 1};
  return tensor(d, m, n, c, h, w, s);
}

bool y_packed(const Conv2dDesc& d) {
  return d.y_strides[3] == 1 && d.y_strides[2] == d.ow && d.y_strides[1] == d.oh * d.ow &&
         d.y_strides[0] == d.o * d.oh * d.ow;
}

// The heuristic's list, the usable entries kept (status SUCCESS, workspace
// at most kMaxWorkspace, math type math_ok).
void choose(cudnnHandle_t h, Plan& p, const Conv2dDesc& d, ConvMath m) {
  std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  int returned = 0;
  check(cudnnGetConvolutionForwardAlgorithm_v7(h, p.xd, p.wd, p.cd, p.yd, static_cast<int>(perf.size()), &returned,
                                               perf.data()),
        "cudnnGetConvolutionForwardAlgorithm_v7", d);
  p.algos.clear();
  for (int i = 0; i < returned; ++i) {
    const auto& r = perf[i];
    if (r.status != CUDNN_STATUS_SUCCESS || r.memory > kMaxWorkspace || !math_ok(m, r.mathType)) continue;
    p.algos.push_back(Algo{r.algo, r.mathType, r.memory});
  }
}

// cuDNN writes a packed [n, o, oh, ow] buffer, copied into y; false when
// cuDNN refuses the buffer's descriptor (its size).
bool to_packed_output(cudnnHandle_t h, Plan& p, const Conv2dDesc& d, ConvMath m) {
  cudnnTensorDescriptor_t t = packed_tensor(d, m, d.n, d.o, d.oh, d.ow);
  if (!t) return false;
  p.y_user = p.yd;
  p.yd = t;
  p.packed = true;
  choose(h, p, d, m);
  return true;
}

void release(Plan& p) {
  for (cudnnTensorDescriptor_t* t : {&p.xd, &p.yd, &p.bd, &p.x_src, &p.x_dst, &p.y_user})
    if (*t) cudnnDestroyTensorDescriptor(*t), *t = nullptr;
  if (p.wd) cudnnDestroyFilterDescriptor(p.wd), p.wd = nullptr;
  if (p.cd) cudnnDestroyConvolutionDescriptor(p.cd), p.cd = nullptr;
}
Plan too_large(Plan& p) {
  release(p);
  p.built = Built::TooLarge;
  return p;
}

Plan build(cudnnHandle_t h, const Conv2dDesc& d, ConvMath m) {
  Plan p;
  if (cudnn_conv_max_images(d) < d.n) return too_large(p);  // past the limit or cuDNN's int parameters
  const int64_t cg = d.c / d.groups;
  const CudnnPadGeometry g = cudnn_pad_geometry(d);
  p.pad = g.pad, p.hp = g.hp, p.wp = g.wp;
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
    p.x_src = tensor(d, m, d.n, d.c, g.h_used, g.w_used, d.x_strides);
    const int64_t s[4] = {d.c * p.hp * p.wp, p.hp * p.wp, p.wp, 1};
    p.x_dst = tensor(d, m, d.n, d.c, g.h_used, g.w_used, s);
    if (!p.xd || !p.x_src || !p.x_dst) return too_large(p);
    p.pad_offset = d.ph * p.wp + d.pw;
  } else {
    p.xd = tensor(d, m, d.n, d.c, d.h, d.w, d.x_strides);
    if (!p.xd) return too_large(p);
  }
  p.yd = tensor(d, m, d.n, d.o, d.oh, d.ow, d.y_strides);
  if (!p.yd) return too_large(p);
  choose(h, p, d, m);
  // None for the strided y: a packed output, copied.
  if (p.algos.empty() && !y_packed(d) && !to_packed_output(h, p, d, m)) return too_large(p);
  if (p.algos.empty()) {
    p.built = Built::NoAlgorithm;
    return p;
  }
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
  p.built = Built::Ok;
  p.ok = true;
  return p;
}

PlanKey key_of(const Conv2dDesc& d, ConvMath math) {
  PlanKey key{d.n, d.c, d.h, d.w, d.o, d.kh, d.kw, d.oh, d.ow, d.sh, d.sw, d.ph, d.pw, d.dh, d.dw, d.groups,
              {}, {}, math};
  for (int i = 0; i < 4; ++i) key.xs[i] = d.x_strides[i], key.ys[i] = d.y_strides[i];
  return key;
}

// Handles (and their plans) per (host thread, device), as kernels/cuda/matmul_lt.cpp:
// a handle is not safe to share between threads issuing work concurrently.
// Never destroyed: destroying at thread exit can race the CUDA runtime's teardown.
struct DeviceState {
  int device = 0;
  cudnnHandle_t handle = nullptr;
  std::map<PlanKey, Plan> plans;  // per call's shape (a chunk's n)
  // Per whole shape: the most images per call, cudnn_conv_max_images
  // first, lowered when cuDNN refuses a descriptor as too large.
  std::map<PlanKey, int64_t> max_images;
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

Plan& plan_for(DeviceState& s, const Conv2dDesc& d, ConvMath math) {
  const PlanKey key = key_of(d, math);
  auto it = s.plans.find(key);
  if (it == s.plans.end()) it = s.plans.emplace(key, build(s.handle, d, math)).first;
  return it->second;
}

// Scratch blocks (workspace, padded input, packed output) come from vt's
// caching allocator on the call's stream (core/allocator.h CudaScratch).
using Scratch = CudaScratch;

// cudnnConvolutionForward with the plan's algorithms in turn: true once one
// ran. One cuDNN refuses at execution (NOT_SUPPORTED: the heuristic lists
// an algorithm without running it, and PyTorch's AlgoIterator::try_all
// moves on to the next on a cuDNN error) is dropped for the shape.
bool forward(DeviceState& s, Plan& p, const Conv2dDesc& d, const void* xin, const void* w, void* yout,
             cudaStream_t stream) {
  const float one = 1.0f, zero = 0.0f;
  while (!p.algos.empty()) {
    const Algo a = p.algos.front();
    check(cudnnSetConvolutionMathType(p.cd, a.math), "cudnnSetConvolutionMathType", d);
    Scratch ws(a.workspace, s.device, stream);
    const cudnnStatus_t st = cudnnConvolutionForward(s.handle, &one, p.xd, xin, p.wd, w, p.cd, a.algo, ws.get(),
                                                     a.workspace, &zero, p.yd, yout);
    if (st != CUDNN_STATUS_NOT_SUPPORTED) {
      check(st, "cudnnConvolutionForward", d);
      return true;
    }
    p.algos.erase(p.algos.begin());
    ++g_retried;
  }
  return false;
}

// One cuDNN call's images (d.n of them at x, y; d.n fits the plan): false
// when cuDNN refused it every way (remembered: p.ok false).
bool run(DeviceState& s, Plan& p, const Conv2dDesc& d, const void* x, const void* w, const float* b, void* y,
         ConvMath math, cudaStream_t stream) {
  // 0 is the compute stream of the op library (the kernels' default, per thread).
  const cudaStream_t cs = stream ? stream : cudaStreamPerThread;
  check(cudnnSetStream(s.handle, cs), "cudnnSetStream", d);
  const float one = 1.0f, zero = 0.0f;
  const size_t es = elem_bytes(math);

  const void* xin = x;
  Scratch padded(p.pad ? static_cast<size_t>(d.n * d.c * p.hp * p.wp) * es : 0, s.device, stream);
  if (p.pad) {
    check_rt(cudaMemsetAsync(padded.get(), 0, static_cast<size_t>(d.n * d.c * p.hp * p.wp) * es, cs),
             "cudaMemsetAsync");
    check(cudnnTransformTensor(s.handle, &one, p.x_src, x, &zero, p.x_dst,
                               static_cast<char*>(padded.get()) + p.pad_offset * static_cast<int64_t>(es)),
          "cudnnTransformTensor (padding copy)", d);
    xin = padded.get();
    ++g_padded;
  }
  const bool epilogue = b || d.relu;
  for (;;) {
    Scratch out(p.packed ? static_cast<size_t>(d.n * d.o * d.oh * d.ow) * es : 0, s.device, stream);
    void* yout = p.packed ? out.get() : y;
    bool fused = false;
    const Algo* pre = p.precomp();
    if (epilogue && math != ConvMath::Bf16 && p.fused_ok && (d.relu || pre)) {
      // IDENTITY only with IMPLICIT_PRECOMP_GEMM (cuDNN API reference, cudnnActivationMode_t).
      const Algo a = d.relu ? p.algos.front() : *pre;
      check(cudnnSetConvolutionMathType(p.cd, a.math), "cudnnSetConvolutionMathType", d);
      Scratch ws(a.workspace, s.device, stream);
      Scratch zero_bias(b ? 0 : static_cast<size_t>(d.o) * sizeof(float), s.device, stream);
      if (!b)
        check_rt(cudaMemsetAsync(zero_bias.get(), 0, static_cast<size_t>(d.o) * sizeof(float), cs),
                 "cudaMemsetAsync");
      const cudnnStatus_t st = cudnnConvolutionBiasActivationForward(
          s.handle, &one, p.xd, xin, p.wd, w, p.cd, a.algo, ws.get(), a.workspace, &zero, p.yd, yout, p.bd,
          b ? static_cast<const void*>(b) : zero_bias.get(), d.relu ? p.relu : p.identity, p.yd, yout);
      if (st == CUDNN_STATUS_NOT_SUPPORTED) {
        p.fused_ok = false;  // remembered: the separate epilogue from now on
      } else {
        check(st, "cudnnConvolutionBiasActivationForward", d);
        fused = true;
        ++g_fused;
      }
    }
    if (!fused && !forward(s, p, d, xin, w, yout, stream)) {
      // Every algorithm refused: for a strided y, once more into a packed
      // buffer (the layout cuDNN's kernels are sure to take); else refused.
      if (!p.packed && !y_packed(d) && to_packed_output(s.handle, p, d, math) && !p.algos.empty()) continue;
      p.ok = false;
      return false;
    }
    if (p.packed) {
      check(cudnnTransformTensor(s.handle, &one, p.yd, yout, &zero, p.y_user, y),
            "cudnnTransformTensor (output copy)", d);
      ++g_packed;
    }
    if (!fused && epilogue) {
      conv_bias_relu(y, math == ConvMath::Bf16 ? DType::BF16 : DType::F32, d.y_strides, d.n, d.o, d.oh, d.ow, b,
                     d.relu, stream);
      ++g_unfused;
    }
    return true;
  }
}

}  // namespace

bool conv2d_cudnn(const Conv2dDesc& d, const void* x, const void* w, const float* b, void* y, ConvMath math,
                  cudaStream_t stream) {
  if (d.n * d.oh * d.ow == 0 || d.o == 0) return true;
  DeviceState& s = state_for_current_device(d);
  const PlanKey key = key_of(d, math);
  auto lim = s.max_images.find(key);
  if (lim == s.max_images.end()) lim = s.max_images.emplace(key, cudnn_conv_max_images(d)).first;
  // The batch in chunks along N, each a view of x and y (no copy), with
  // their plans (at most two distinct sizes).
  std::vector<int64_t> chunks;
  std::vector<Plan*> plans;
  for (;;) {
    chunks = cudnn_conv_chunks(d.n, lim->second);
    if (chunks.empty()) {  // one image is past cuDNN's limit (remembered)
      ++g_refused;
      return false;
    }
    plans.clear();
    Built built = Built::Ok;
    for (int64_t c : chunks) {
      Conv2dDesc dc = d;
      dc.n = c;
      Plan& p = plan_for(s, dc, math);
      if (p.built == Built::TooLarge || !p.ok) {
        built = p.built == Built::TooLarge ? Built::TooLarge : Built::NoAlgorithm;
        break;
      }
      plans.push_back(&p);
    }
    if (built == Built::TooLarge) {
      // cuDNN's limit is below the documented one: one image fewer than the
      // largest chunk, until it takes them (descriptors only, no GPU work;
      // ends at the fewest chunks its limit allows).
      lim->second = chunks.front() - 1;
      continue;
    }
    if (built == Built::NoAlgorithm) {
      ++g_refused;
      return false;
    }
    break;
  }
  const int64_t es = static_cast<int64_t>(elem_bytes(math));
  int64_t n0 = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    Conv2dDesc dc = d;
    dc.n = chunks[i];
    if (!run(s, *plans[i], dc, static_cast<const char*>(x) + n0 * d.x_strides[0] * es, w, b,
             static_cast<char*>(y) + n0 * d.y_strides[0] * es, math, stream)) {
      ++g_refused;  // y may be partly written: the hand-written kernel writes all of it
      return false;
    }
    n0 += chunks[i];
  }
  if (chunks.size() > 1) {
    ++g_split;
    g_chunks += static_cast<int64_t>(chunks.size());
  }
  return true;
}

void set_conv_cudnn(bool on) { g_on = on; }
bool conv_cudnn() { return g_on; }

CudnnConvCounts cudnn_conv_counts() {
  CudnnConvCounts c;
  c.fused = g_fused, c.unfused = g_unfused, c.padded = g_padded, c.packed_out = g_packed, c.refused = g_refused;
  c.split = g_split, c.chunks = g_chunks, c.retried = g_retried;
  return c;
}

}  // namespace cuda
}  // namespace vt
#endif  // VT_CUDNN_CONV
