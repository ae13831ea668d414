// The cuDNN convolution (kernels/cuda/conv_cudnn.h) behind kernels/conv.h
// against the CPU twin (oneDNN, the conv the FID Inception runs on the
// host; tests/cuda/test_cuda_conv_pool.cpp checks it against a naive double
// loop) on odd shapes, one option at a time, in fp32 to 1e-5 of the largest
// output: groups, stride, dilation, asymmetric padding (cuDNN's symmetric
// padding where it gives the same rows, else the explicit pad copy), bias
// alone (fused with IDENTITY, hence IMPLICIT_PRECOMP_GEMM), ReLU alone (a
// zero bias), bias + ReLU, neither (cudnnConvolutionForward). The path each
// call took is read from cudnn_conv_counts(): exactly in the emulator; on a
// GPU fused or separate epilogue either way (what its cuDNN offers), with
// the pad copy and no refusal (no fp32 FMA algorithm) asserted. In the emulator
// (tests/cuda/emu/cudnn_emu.cpp) also: a refused fused call falls back to
// the separate epilogue, a y without an algorithm goes through the packed
// output copy, and the stand-in refuses IDENTITY with another algorithm as
// cuDNN documents. TF32 and bf16 per call against the CPU on rounded inputs.
// Emulator knobs (cudnn_emu.cpp): a lowered tensor size limit cuts the batch
// along N (also through the pad copy and into a channel slice), one image
// past it goes to the hand-written kernel, an algorithm refused at
// execution is replaced by the next, a strided y every algorithm refuses
// goes through the packed copy, and heuristic entries with
// CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION are not run for TF32 or bf16.
#include <gtest/gtest.h>

#if defined(VT_CUDNN_CONV)
#include <cmath>
#include <cstdio>
#include <cstring>

#include "core/dtype.h"
#include "cuda_test_util.h"
#include "kernels/conv.h"
#include "kernels/cuda/conv_cudnn.h"

#if defined(VT_CUDA_EMU)
#include <cudnn.h>

#include <cstdlib>
#include <string>

namespace vt_emu {  // tests/cuda/emu/cudnn_emu.cpp
void cudnn_emu_refuse_fused(bool on);
void cudnn_emu_no_strided_y(bool on);
}  // namespace vt_emu
#endif

namespace vt {
namespace {

using namespace cudatest;

Conv2dParams params(int sh, int sw, int ph, int pw, int ph_end, int pw_end, int dh, int dw, int groups, bool relu) {
  Conv2dParams p;
  p.stride_h = sh, p.stride_w = sw, p.pad_h = ph, p.pad_w = pw, p.pad_h_end = ph_end, p.pad_w_end = pw_end;
  p.dilation_h = dh, p.dilation_w = dw, p.groups = groups, p.relu = relu;
  return p;
}

struct Case {
  const char* name;
  int64_t n, c, h, w, o, kh, kw;
  Conv2dParams p;
  bool bias;
  int64_t y_extra;  // y is channels [y_extra, y_extra + O) of a larger buffer
  // Expected path: fused call, separate epilogue, pad copy.
  int fused, unfused, padded;
};

cuda::CudnnConvCounts delta(const cuda::CudnnConvCounts& a, const cuda::CudnnConvCounts& b) {
  return {b.fused - a.fused,     b.unfused - a.unfused, b.padded - a.padded, b.packed_out - a.packed_out,
          b.refused - a.refused, b.split - a.split,     b.chunks - a.chunks, b.retried - a.retried};
}

// conv2d_forward on the device (into a slice of a buffer of 7s) vs the CPU.
void expect_matches_cpu(const Case& k, uint64_t seed) {
  SCOPED_TRACE(k.name);
  const Tensor x = randn_tensor({k.n, k.c, k.h, k.w}, seed), w = randn_tensor({k.o, k.c / k.p.groups, k.kh, k.kw}, seed + 1);
  const Tensor b = k.bias ? randn_tensor({k.o}, seed + 2) : Tensor();
  const Shape out = conv2d_output_shape(x.shape(), w.shape(), k.p);
  Tensor want = Tensor::empty(out);
  conv2d_forward(x, w, b, want, k.p);
  const Device dev = Device::cuda(0);
  Tensor gybuf = Tensor::full({out[0], out[1] + k.y_extra, out[2], out[3]}, 7.f, dev);
  const auto before = cuda::cudnn_conv_counts();
  conv2d_forward(x.to(dev), w.to(dev), k.bias ? b.to(dev) : Tensor(), gybuf.slice(1, k.y_extra, k.y_extra + out[1]),
                 k.p);
  const auto d = delta(before, cuda::cudnn_conv_counts());
#if defined(VT_CUDA_EMU)
  EXPECT_EQ(d.fused, k.fused);
  EXPECT_EQ(d.unfused, k.unfused);
#else  // a GPU's cuDNN may offer no IMPLICIT_PRECOMP_GEMM or refuse the fused call: either epilogue path
  EXPECT_EQ(d.fused + d.unfused, k.fused + k.unfused);
  std::printf("%s: fused %lld, separate epilogue %lld\n", k.name, static_cast<long long>(d.fused),
              static_cast<long long>(d.unfused));
#endif
  EXPECT_EQ(d.padded, k.padded);
  EXPECT_EQ(d.refused, 0) << "no fp32 (FMA) algorithm: the hand-written kernel ran";
  const Tensor got = gybuf.to(Device::cpu());
  expect_close(got.slice(1, k.y_extra, k.y_extra + out[1]).contiguous().to_vector(), want.to_vector(), 1e-5,
               "cuDNN vs CPU");
  if (k.y_extra > 0) {  // channels outside the slice untouched
    for (float v : got.slice(1, 0, k.y_extra).contiguous().to_vector()) ASSERT_EQ(v, 7.f);
  }
}

TEST(CudaConvCudnn, EachOptionMatchesCpuTwin) {
  VT_SKIP_WITHOUT_GPU();
  ASSERT_TRUE(conv_uses_cudnn());
  // (name, n, c, h, w, o, kh, kw, params, bias, y_extra, fused, unfused, padded)
  const Case cases[] = {
      {"plain 3x3 pad 1", 2, 5, 9, 11, 7, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 1, false), false, 0, 0, 0, 0},
      {"groups 3", 2, 6, 7, 9, 9, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 3, false), false, 0, 0, 0, 0},
      {"depthwise 5x5", 1, 8, 6, 7, 8, 5, 5, params(1, 1, 2, 2, -1, -1, 1, 1, 8, false), false, 0, 0, 0, 0},
      {"stride 2 (odd size, last row unread)", 2, 4, 10, 11, 5, 3, 3, params(2, 2, 1, 1, -1, -1, 1, 1, 1, false),
       false, 0, 0, 0, 0},
      {"stride (3, 2)", 1, 3, 13, 9, 6, 3, 2, params(3, 2, 0, 1, -1, -1, 1, 1, 1, false), false, 0, 0, 0, 0},
      {"dilation (2, 3)", 2, 3, 11, 13, 4, 3, 3, params(1, 1, 2, 3, -1, -1, 2, 3, 1, false), false, 0, 0, 0, 0},
      {"asymmetric (0, 1, 0, 1) stride 2 (Downsample2D)", 2, 3, 9, 8, 5, 3, 3, params(2, 2, 0, 0, 1, 1, 1, 1, 1, false),
       false, 0, 0, 0, 1},
      {"asymmetric (2, 0; 1, 3)", 1, 4, 7, 6, 3, 3, 3, params(1, 1, 2, 0, 1, 3, 1, 1, 1, false), false, 0, 0, 0, 1},
      {"asymmetric (1, 0) top only, dilation 2, groups 2", 2, 4, 9, 9, 6, 3, 3, params(1, 1, 1, 1, 0, 0, 2, 2, 2, false),
       false, 0, 0, 0, 1},
      {"bias alone: IDENTITY", 2, 5, 8, 7, 6, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 1, false), true, 0, 1, 0, 0},
      {"ReLU alone: zero bias", 2, 5, 8, 7, 6, 1, 3, params(1, 1, 0, 1, -1, -1, 1, 1, 1, true), false, 0, 1, 0, 0},
      {"bias + ReLU, 1x7, channel slice", 3, 12, 7, 13, 20, 1, 7, params(1, 1, 0, 3, -1, -1, 1, 1, 1, true), true, 5, 1,
       0, 0},
      {"bias + ReLU, asymmetric, groups 3, slice", 2, 6, 10, 9, 9, 3, 2, params(2, 2, 1, 0, 0, 2, 2, 1, 3, true), true,
       2, 1, 0, 1},
  };
  uint64_t seed = 100;
  for (const Case& k : cases) expect_matches_cpu(k, seed += 3);
}

// The Inception's units: 1x1, 3x3 stride 2 unpadded, 1x7 / 7x1 with (0, 3) /
// (3, 0) padding, all bias + ReLU into a block's channel slice: fused.
TEST(CudaConvCudnn, InceptionUnitsFused) {
  VT_SKIP_WITHOUT_GPU();
  const Case cases[] = {
      {"1x1", 2, 24, 17, 17, 12, 1, 1, params(1, 1, 0, 0, -1, -1, 1, 1, 1, true), true, 8, 1, 0, 0},
      {"3x3 stride 2", 2, 12, 35, 35, 16, 3, 3, params(2, 2, 0, 0, -1, -1, 1, 1, 1, true), true, 4, 1, 0, 0},
      {"7x1 pad (3, 0)", 1, 8, 17, 17, 8, 7, 1, params(1, 1, 3, 0, -1, -1, 1, 1, 1, true), true, 0, 1, 0, 0},
  };
  uint64_t seed = 300;
  for (const Case& k : cases) expect_matches_cpu(k, seed += 3);
}

#if defined(VT_CUDA_EMU)
// A fused call cuDNN refuses (NOT_SUPPORTED): the same output through
// cudnnConvolutionForward and the epilogue kernel, remembered for the shape.
TEST(CudaConvCudnn, RefusedFusedCallFallsBackToEpilogue) {
  vt_emu::cudnn_emu_refuse_fused(true);
  const Case k{"refused fused", 2, 5, 7, 8, 6, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 1, true), true, 2, 0, 1, 0};
  expect_matches_cpu(k, 400);
  vt_emu::cudnn_emu_refuse_fused(false);
  expect_matches_cpu(k, 410);  // the shape stays on the separate epilogue
}

// No algorithm for a channel-slice y: cuDNN writes a packed buffer, copied in.
TEST(CudaConvCudnn, StridedOutputWithoutAlgorithmGoesThroughPackedCopy) {
  vt_emu::cudnn_emu_no_strided_y(true);
  const auto before = cuda::cudnn_conv_counts();
  const Case k{"packed output", 2, 4, 6, 7, 5, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 1, true), true, 3, 1, 0, 0};
  expect_matches_cpu(k, 500);
  vt_emu::cudnn_emu_no_strided_y(false);
  EXPECT_EQ(cuda::cudnn_conv_counts().packed_out - before.packed_out, 1);
}

// The stand-in's documented refusal: CUDNN_ACTIVATION_IDENTITY in
// cudnnConvolutionBiasActivationForward needs IMPLICIT_PRECOMP_GEMM.
TEST(CudaConvCudnn, EmulatorRefusesIdentityWithoutPrecompGemm) {
  cudnnHandle_t h;
  ASSERT_EQ(cudnnCreate(&h), CUDNN_STATUS_SUCCESS);
  cudnnTensorDescriptor_t xd, yd, bd;
  cudnnFilterDescriptor_t wd;
  cudnnConvolutionDescriptor_t cd;
  cudnnActivationDescriptor_t ad;
  cudnnCreateTensorDescriptor(&xd), cudnnCreateTensorDescriptor(&yd), cudnnCreateTensorDescriptor(&bd);
  cudnnCreateFilterDescriptor(&wd), cudnnCreateConvolutionDescriptor(&cd), cudnnCreateActivationDescriptor(&ad);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 3, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 3, 3), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetTensor4dDescriptor(bd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 1, 1), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 2, 2, 1, 1), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudnnSetActivationDescriptor(ad, CUDNN_ACTIVATION_IDENTITY, CUDNN_NOT_PROPAGATE_NAN, 0.0),
            CUDNN_STATUS_SUCCESS);
  std::vector<float> x(18, 1.f), w = {1.f, 2.f, 3.f, 4.f}, b = {0.5f, -0.5f}, y(18, 0.f);
  std::vector<char> ws(size_t{1} << 20);
  const float one = 1.f, zero = 0.f;
  auto call = [&](cudnnConvolutionFwdAlgo_t algo) {
    return cudnnConvolutionBiasActivationForward(h, &one, xd, x.data(), wd, w.data(), cd, algo, ws.data(), ws.size(),
                                                 &zero, yd, y.data(), bd, b.data(), ad, yd, y.data());
  };
  EXPECT_EQ(call(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM), CUDNN_STATUS_NOT_SUPPORTED);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(y[0], 0.f);  // nothing written
  ASSERT_EQ(call(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM), CUDNN_STATUS_SUCCESS);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the conv is queued on the handle's stream
  // y[o] = sum_c w[o, c] * 1 + b[o]: 1 + 2 + 0.5, 3 + 4 - 0.5.
  EXPECT_EQ(y[0], 3.5f);
  EXPECT_EQ(y[9], 6.5f);
  // A y whose dims are not the convolution's output: BAD_PARAM.
  cudnnTensorDescriptor_t bad;
  cudnnCreateTensorDescriptor(&bad);
  cudnnSetTensor4dDescriptor(bad, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 2, 2, 3);
  EXPECT_EQ(cudnnConvolutionForward(h, &one, xd, x.data(), wd, w.data(), cd, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                                    nullptr, 0, &zero, bad, y.data()),
            CUDNN_STATUS_BAD_PARAM);
  for (auto* t : {xd, yd, bd, bad}) cudnnDestroyTensorDescriptor(t);
  cudnnDestroyFilterDescriptor(wd), cudnnDestroyConvolutionDescriptor(cd), cudnnDestroyActivationDescriptor(ad);
  cudnnDestroy(h);
}

// An environment knob of the stand-in for one scope (read at every call).
struct ScopedEnv {
  std::string name;
  ScopedEnv(const char* n, const std::string& v) : name(n) { setenv(n, v.c_str(), 1); }
  ~ScopedEnv() { unsetenv(name.c_str()); }
};

cudnnStatus_t set4d(cudnnTensorDescriptor_t t, int n, int c, int h, int w) {
  return cudnnSetTensor4dDescriptor(t, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w);
}

// The stand-in's size rule (cudnn_emu.cpp): a descriptor past 2^31 - 1
// elements, the gaps of its strides included, is NOT_SUPPORTED, as
// cudnnSetTensor4dDescriptor(Ex) documents; VT_EMU_CUDNN_MAX_ELEMENTS lowers it.
TEST(CudaConvCudnn, EmulatorRefusesTensorsPastTwoGigaElements) {
  cudnnTensorDescriptor_t t;
  ASSERT_EQ(cudnnCreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
  // [N, 256, 256, 256]: 2^24 per image; N = 128 is 2^31 (onnxruntime#15715's case at 256 px).
  EXPECT_EQ(set4d(t, 128, 256, 256, 256), CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(set4d(t, 127, 256, 256, 256), CUDNN_STATUS_SUCCESS);
  // 129 images of 128 channels sliced from a 256-channel buffer: 129 * 2^23
  // elements (< 2^31), but a span of 128 * 2^24 + 2^23 (> 2^31 - 1).
  EXPECT_EQ(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 129, 128, 256, 256, 1 << 24, 1 << 16, 256, 1),
            CUDNN_STATUS_NOT_SUPPORTED);
  EXPECT_EQ(cudnnSetTensor4dDescriptorEx(t, CUDNN_DATA_FLOAT, 127, 128, 256, 256, 1 << 24, 1 << 16, 256, 1),
            CUDNN_STATUS_SUCCESS);
  {
    ScopedEnv limit("VT_EMU_CUDNN_MAX_ELEMENTS", "100");
    EXPECT_EQ(set4d(t, 1, 4, 5, 5), CUDNN_STATUS_SUCCESS);  // 100
    EXPECT_EQ(set4d(t, 1, 4, 5, 6), CUDNN_STATUS_NOT_SUPPORTED);  // 120
  }
  cudnnDestroyTensorDescriptor(t);
}

// With the limit lowered to L, no call may take more than m images, m the
// largest with every tensor's span (one image's span + (m - 1) N strides)
// at most L; the caller, which starts from 2^31 - 1 and makes its chunks
// smaller while cuDNN refuses them, makes the fewest calls, ceil(N / m). The output equals the CPU's, channels outside y's
// slice untouched, and the next call of the shape cuts the same way.
TEST(CudaConvCudnn, LoweredElementLimitCutsTheBatchAlongN) {
  ScopedEnv limit("VT_EMU_CUDNN_MAX_ELEMENTS", "1000");
  // x [5, 3, 8, 8] (192 per image), y channels [2, 6) of [5, 6, 8, 8]: a span
  // of 3 * 64 + 64 = 256 for one image, N stride 384: m = (1000 - 256) / 384 + 1 = 2.
  const Case k{"split, bias + ReLU into a slice", 5, 3, 8, 8, 4, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 1, true), true,
               2, 3, 0, 0};
  for (uint64_t seed : {800, 810}) {
    const auto before = cuda::cudnn_conv_counts();
    expect_matches_cpu(k, seed);
    const auto d = delta(before, cuda::cudnn_conv_counts());
    EXPECT_EQ(d.split, 1);
    EXPECT_EQ(d.chunks, (5 + 1) / 2);
  }
  // Downsample2D's (0, 1, 0, 1) pad copy under 500: x [4, 3, 9, 8] read whole
  // (216 per image: (500 - 216) / 216 + 1 = 2), the padded buffer [., 3, 9, 9]
  // (243: (500 - 243) / 243 + 1 = 2), y [., 5, 4, 4] (80: 6), so m = 2.
  ScopedEnv lower("VT_EMU_CUDNN_MAX_ELEMENTS", "500");
  const Case p{"split through the pad copy", 4, 3, 9, 8, 5, 3, 3, params(2, 2, 0, 0, 1, 1, 1, 1, 1, false), false, 0,
               0, 0, 2};
  const auto before = cuda::cudnn_conv_counts();
  expect_matches_cpu(p, 820);
  const auto d = delta(before, cuda::cudnn_conv_counts());
  EXPECT_EQ(d.split, 1);
  EXPECT_EQ(d.chunks, 4 / 2);
}

// One image past the limit: cuDNN cannot take the shape; the hand-written
// kernel runs (refused), with the same output.
TEST(CudaConvCudnn, ImagePastTheLimitGoesToTheHandWrittenKernel) {
  ScopedEnv limit("VT_EMU_CUDNN_MAX_ELEMENTS", "100");  // x [2, 3, 7, 7]: 147 per image
  const Tensor x = randn_tensor({2, 3, 7, 7}, 830), w = randn_tensor({2, 3, 3, 3}, 831), b = randn_tensor({2}, 832);
  const Conv2dParams p = params(1, 1, 1, 1, -1, -1, 1, 1, 1, true);
  Tensor want = Tensor::empty(conv2d_output_shape(x.shape(), w.shape(), p));
  conv2d_forward(x, w, b, want, p);
  const Device dev = Device::cuda(0);
  Tensor got = Tensor::empty(want.shape(), DType::F32, dev);
  const auto before = cuda::cudnn_conv_counts();
  conv2d_forward(x.to(dev), w.to(dev), b.to(dev), got, p);
  EXPECT_EQ(delta(before, cuda::cudnn_conv_counts()).refused, 1);
  expect_close(got.to_vector(), want.to_vector(), 1e-5, "hand-written kernel vs CPU");
}

// cudnnConvolutionForward refusing at execution (VT_EMU_CUDNN_EXEC_NOT_SUPPORTED):
// the next algorithm (remembered: no retry on the next call), the packed
// output for a strided y every algorithm refuses, the hand-written kernel
// when everything is refused; never an exception.
TEST(CudaConvCudnn, ExecutionRefusalRetriesInsteadOfThrowing) {
  {
    ScopedEnv refuse("VT_EMU_CUDNN_EXEC_NOT_SUPPORTED", "0");  // IMPLICIT_GEMM, the heuristic's first
    const Case k{"IMPLICIT_GEMM refused", 2, 3, 6, 5, 4, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 1, false), false, 0, 0,
                 0, 0};
    for (int64_t retried : {1, 0}) {
      const auto before = cuda::cudnn_conv_counts();
      expect_matches_cpu(k, 840);
      EXPECT_EQ(delta(before, cuda::cudnn_conv_counts()).retried, retried);
    }
  }
  {
    ScopedEnv refuse("VT_EMU_CUDNN_EXEC_NOT_SUPPORTED", "strided");
    // y channels [1, 5) of a 5-channel buffer, no epilogue (the knob is
    // cudnnConvolutionForward's; the fused call is not refused by it).
    const Case k{"strided y refused", 2, 3, 6, 6, 4, 3, 3, params(1, 1, 1, 1, -1, -1, 1, 1, 1, false), false, 1, 0, 0,
                 0};
    const auto before = cuda::cudnn_conv_counts();
    expect_matches_cpu(k, 850);
    const auto d = delta(before, cuda::cudnn_conv_counts());
    EXPECT_EQ(d.retried, 2);  // both algorithms, on the strided y
    EXPECT_EQ(d.packed_out, 1);
  }
  {
    ScopedEnv refuse("VT_EMU_CUDNN_EXEC_NOT_SUPPORTED", "all");
    const Tensor x = randn_tensor({2, 3, 6, 7}, 860), w = randn_tensor({4, 3, 3, 3}, 861);
    const Conv2dParams p = params(1, 1, 1, 1, -1, -1, 1, 1, 1, false);
    Tensor want = Tensor::empty(conv2d_output_shape(x.shape(), w.shape(), p));
    conv2d_forward(x, w, Tensor(), want, p);
    const Device dev = Device::cuda(0);
    Tensor got = Tensor::empty(want.shape(), DType::F32, dev);
    const auto before = cuda::cudnn_conv_counts();
    conv2d_forward(x.to(dev), w.to(dev), Tensor(), got, p);
    EXPECT_EQ(delta(before, cuda::cudnn_conv_counts()).refused, 1);
    expect_close(got.to_vector(), want.to_vector(), 1e-5, "hand-written kernel vs CPU");
  }
}

#endif  // VT_CUDA_EMU

// fp32 -> TF32: 10 mantissa bits, nearest (ties to even; the emulator's
// rounding. A GPU's tensor cores may round otherwise, hence the tight bound
// against this reference is asserted only in the emulator).
float round_tf32(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  u += 0xfffu + ((u >> 13) & 1u);
  u &= ~0x1fffu;
  std::memcpy(&v, &u, 4);
  return v;
}
Tensor rounded_tf32(const Tensor& t) {
  std::vector<float> v = t.contiguous().to_vector();
  for (float& x : v) x = round_tf32(x);
  return Tensor::from_vector(v, t.shape());
}

#if defined(VT_CUDA_EMU)
// Heuristic entries whose math type is CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
// (fp32 / bf16 data down to fp16) listed first: not run for TF32 or bf16.
// Inputs of magnitude ~1e5, past fp16's 65504: through fp16 the output
// would be inf; it is the CPU's on the TF32- (bf16-) rounded inputs.
TEST(CudaConvCudnn, AllowConversionEntriesAreNotRun) {
  ScopedEnv offer("VT_EMU_CUDNN_OFFER_ALLOW_CONVERSION", "1");
  const Device dev = Device::cuda(0);
  const Conv2dParams p0 = params(1, 1, 1, 1, -1, -1, 1, 1, 1, false);
  auto scaled = [](const Tensor& t, float s) {
    std::vector<float> v = t.to_vector();
    for (float& e : v) e *= s;
    return Tensor::from_vector(v, t.shape());
  };
  const Tensor x = scaled(randn_tensor({2, 4, 6, 5}, 870), 1e5f), w = randn_tensor({3, 4, 3, 3}, 871);
  const Shape out = conv2d_output_shape(x.shape(), w.shape(), p0);
  {  // TF32
    Conv2dParams p = p0;
    Tensor want = Tensor::empty(out);
    conv2d_forward(rounded_tf32(x), rounded_tf32(w), Tensor(), want, p);
    p.tf32 = true;
    Tensor got = Tensor::empty(out, DType::F32, dev);
    conv2d_forward(x.to(dev), w.to(dev), Tensor(), got, p);
    expect_close(got.to_vector(), want.to_vector(), 1e-5, "TF32 vs CPU on TF32-rounded inputs");
  }
  {  // bf16
    const Tensor xb = x.to(DType::BF16), wb = w.to(DType::BF16);
    Tensor want = Tensor::empty(out);
    conv2d_forward(xb.to(DType::F32), wb.to(DType::F32), Tensor(), want, p0);
    Tensor got = Tensor::empty(out, DType::BF16, dev);
    conv2d_forward(xb.to(dev), wb.to(dev), Tensor(), got, p0);
    expect_close(got.to(Device::cpu()).to(DType::F32).to_vector(), want.to_vector(), out_tol(DType::BF16),
                 "bf16 vs CPU on the bf16 values");
  }
}
#endif  // VT_CUDA_EMU

// Conv2dParams::tf32: TF32 tensor cores allowed. Against the CPU on inputs
// rounded to TF32 (what tensor cores multiply); far from the fp32 result.
TEST(CudaConvCudnn, Tf32PerCall) {
  VT_SKIP_WITHOUT_GPU();
  const Tensor x = randn_tensor({2, 16, 9, 9}, 600), w = randn_tensor({8, 16, 3, 3}, 601), b = randn_tensor({8}, 602);
  Conv2dParams p = params(1, 1, 1, 1, -1, -1, 1, 1, 1, true);
  const Shape out = conv2d_output_shape(x.shape(), w.shape(), p);
  Tensor fp32 = Tensor::empty(out), tf32 = Tensor::empty(out);
  conv2d_forward(x, w, b, fp32, p);
  conv2d_forward(rounded_tf32(x), rounded_tf32(w), b, tf32, p);
  const Device dev = Device::cuda(0);
  p.tf32 = true;
  Tensor gy = Tensor::empty(out, DType::F32, dev);
  conv2d_forward(x.to(dev), w.to(dev), b.to(dev), gy, p);
  const std::vector<float> got = gy.to_vector();
#if defined(VT_CUDA_EMU)
  expect_close(got, tf32.to_vector(), 1e-5, "TF32 vs CPU on TF32-rounded inputs");
#endif
  // TF32's bound: 2^-11 relative per input, K = 144 terms; a GPU may round differently.
  expect_close(got, fp32.to_vector(), 1e-2, "TF32 vs fp32");
  double diff = 0;
  const std::vector<float> f = fp32.to_vector();
  for (size_t i = 0; i < f.size(); ++i) diff = std::max(diff, std::fabs(static_cast<double>(got[i]) - f[i]));
#if defined(VT_CUDA_EMU)
  EXPECT_GT(diff, 1e-5) << "TF32 result equals fp32: the option did not take effect";
#else  // TF32 is permitted, not required: cuDNN may pick an FMA kernel at this size
  std::printf("TF32 vs fp32: max difference %.3g\n", diff);
#endif
}

// ConvMath::Bf16 through the raw API: bf16 x, w, y; fp32 bias by the epilogue.
TEST(CudaConvCudnn, Bf16PerCall) {
  VT_SKIP_WITHOUT_GPU();
  const Tensor x = randn_tensor({2, 6, 8, 7}, 700).to(DType::BF16), w = randn_tensor({4, 3, 3, 3}, 701).to(DType::BF16);
  const Tensor b = randn_tensor({4}, 702);
  Conv2dParams p = params(1, 1, 1, 1, -1, -1, 1, 1, 2, true);
  const Shape out = conv2d_output_shape(x.shape(), w.shape(), p);
  Tensor want = Tensor::empty(out);
  conv2d_forward(x.to(DType::F32), w.to(DType::F32), b, want, p);  // the CPU on the same (bf16) values
  const Device dev = Device::cuda(0);
  const Tensor gx = x.to(dev), gw = w.to(dev), gb = b.to(dev);
  Tensor gy = Tensor::empty(out, DType::BF16, dev);
  Conv2dDesc d{};
  d.n = 2, d.c = 6, d.h = 8, d.w = 7, d.o = 4, d.kh = 3, d.kw = 3, d.oh = out[2], d.ow = out[3];
  d.sh = d.sw = 1, d.ph = d.pw = 1, d.dh = d.dw = 1, d.groups = 2, d.relu = true;
  for (int i = 0; i < 4; ++i) d.x_strides[i] = gx.strides()[i], d.y_strides[i] = gy.strides()[i];
  const auto before = cuda::cudnn_conv_counts();
  ASSERT_TRUE(cuda::conv2d_cudnn(d, gx.raw(), gw.raw(), gb.f32(), gy.raw(), cuda::ConvMath::Bf16));
  EXPECT_EQ(cuda::cudnn_conv_counts().unfused - before.unfused, 1);  // bf16: the separate epilogue
  EXPECT_EQ(cuda::cudnn_conv_counts().refused - before.refused, 0);
  expect_close(gy.to(Device::cpu()).to(DType::F32).to_vector(), want.to_vector(), out_tol(DType::BF16),
               "bf16 cuDNN vs CPU");
}

}  // namespace
}  // namespace vt
#endif  // VT_CUDNN_CONV
