// diffusers' AutoencoderKL (vae/) on emulated CUDA against the same model on
// the CPU: encode (mean, logvar) and decode of
//   - the committed narrow fixture (diffusers' own weights, 4 levels, 8x
//     downsampling, mid attention of width 16: the flash kernel);
//   - a random-weight configuration whose mid attention is 160 wide, past
//     the flash kernel's head_dim <= 128, so it runs the cuBLAS probabilities
//     path that sd-vae's width 512 takes;
//   - sd-vae-ft-ema's structure ([128, 256, 512, 512], 2 layers, 32 groups)
//     with random weights at 16x16 pixels (2x2 latents).
// fp32 must agree within 1e-4 (max abs) with the CPU; the emulated cuDNN is
// the cuDNN path (cudnn_emu.cpp) when the build found cudnn.h. tf32: each
// convolution output within the bound TF32's rounding of its inputs implies
// (below), and the whole decode within that bound per layer. bf16:
// test_vae_bf16_emu.cpp (the model) and test_vae_bf16_ops_emu.cpp (its ops).
// With cuDNN's tensor size limit lowered (VT_EMU_CUDNN_MAX_ELEMENTS) the
// decode's largest convolutions are cut along N and the images are the
// unsplit decode's (dittrain sample at batch >= 128, 256 px, scaled down).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <thread>

#include "core/philox.h"
#include "core/safetensors.h"
#include "kernels/attention.h"
#include "kernels/conv.h"
#include "kernels/matmul.h"
#if defined(VT_CUDNN_CONV)
#include "kernels/cuda/conv_cudnn.h"
#endif
#include "test_fs.h"
#include "vae/autoencoder_kl.h"
#include "vae_emu_models.h"

namespace vt {
namespace {

using namespace vae_emu;


// Device results on the VAE's device, within `tol` max abs of the CPU's,
// whose values must be O(1) for the bound to mean something.
void expect_agree(const Tensor& got, const Tensor& want, double tol, const char* what) {
  ASSERT_EQ(got.device(), kGpu) << what;
  const Diff d = diff_of(got, want);
  EXPECT_GT(d.rms_want, 0.05) << what << " reference is degenerate";
  EXPECT_LE(d.max_abs, tol) << what << " (rms " << d.rms_want << ")";
  std::printf("%s: max abs difference %.3g (rms %.3g)\n", what, d.max_abs, d.rms_want);
}

// encode and decode of one model on both devices, fp32.
void check_fp32(AutoencoderKL cpu, const Tensor& images, const char* name) {
  const AutoencoderKL::Posterior pc = cpu.encode(images);
  const Tensor dc = cpu.decode(pc.mean);
  AutoencoderKL gpu = cpu;  // the weights are shared views: to() re-points this copy only
  gpu.to(kGpu);
  ASSERT_EQ(cpu.device(), Device::cpu());
  const AutoencoderKL::Posterior pg = gpu.encode(images.to(kGpu));
  expect_agree(pg.mean, pc.mean, 1e-4, (std::string(name) + " mean").c_str());
  expect_agree(pg.logvar, pc.logvar, 1e-4, (std::string(name) + " logvar").c_str());
  // Latents from the host (uploaded by decode) and from the device give the same images.
  const Tensor dg = gpu.decode(pc.mean);
  expect_agree(dg, dc, 1e-4, (std::string(name) + " decoded").c_str());
  EXPECT_EQ(gpu.decode(pc.mean.to(kGpu)).to_vector(), dg.to_vector());
}

TEST(VaeEmu, NarrowFixtureMatchesCpu) {
  std::printf("convolutions on emulated CUDA: %s\n", conv_uses_cudnn() ? "cuDNN (cudnn_emu.cpp)" : "hand-written kernel");
  const Tensor images = load_safetensors(kNarrow + "/io.safetensors").at("images");
  check_fp32(AutoencoderKL::load(kNarrow), images, "narrow");
}

TEST(VaeEmu, WideAttentionRunsTheProbabilitiesPath) {
  // Mid attention of width 160: the flash kernel does not take it.
  ASSERT_FALSE(attention_saved_spec(kGpu, 1, 64, 1, 160).lse);
  const AutoencoderKLConfig cfg = config_of({32, 160}, 1, 32);
  check_fp32(random_vae(cfg, 11), randn({2, 3, 16, 16}, 12, 0, 0.5), "wide");
}

TEST(VaeEmu, SdVaeStructureMatchesCpu) {
  const AutoencoderKLConfig cfg = config_of({128, 256, 512, 512}, 2, 32);
  check_fp32(random_vae(cfg, 21), randn({1, 3, 16, 16}, 22, 0, 0.5), "sd-vae");
}

// TF32 (10 explicit mantissa bits, round to nearest): each input of a product
// is rounded with relative error <= 2^-11, so a product with <= 2^-10 +
// 2^-22; a convolution output is off by at most (2^-10 + 2^-22) sum |x w|,
// plus the fp32 accumulation of both sides (2^-23 per term, generously).
TEST(VaeEmu, Tf32ConvolutionWithinTheTf32Bound) {
  if (!conv_uses_cudnn()) GTEST_SKIP() << "TF32 convolutions need cuDNN (the hand-written kernel is fp32)";
  // A 3x3 layer as the VAE's ResnetBlock2D runs it with precision tf32.
  const Tensor x = randn({2, 32, 9, 7}, 32, 0, 1.0, 0.5);
  const Tensor w = randn({32, 32, 3, 3}, 33, 0, 1.0 / std::sqrt(288.0));
  Tensor b = Tensor::zeros({32});
  Conv2dParams p;
  p.pad_h = p.pad_w = 1;
  Tensor want = Tensor::empty(conv2d_output_shape(x.shape(), w.shape(), p));
  conv2d_forward(x, w, b, want, p);
  p.tf32 = true;
  Tensor got = Tensor::empty(want.shape(), DType::F32, kGpu);
  conv2d_forward(x.to(kGpu), w.to(kGpu), b.to(kGpu), got, p);
  // sum |x w| per output, in double.
  const std::vector<float> xv = x.to_vector(), wv = w.to_vector(), gv = got.to_vector(), yv = want.to_vector();
  const int64_t N = 2, C = 32, H = 9, W = 7, O = 32;
  double worst = 0, any = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < H; ++i)
        for (int64_t j = 0; j < W; ++j) {
          double s = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t a = 0; a < 3; ++a)
              for (int64_t d = 0; d < 3; ++d) {
                const int64_t ii = i - 1 + a, jj = j - 1 + d;
                if (ii < 0 || ii >= H || jj < 0 || jj >= W) continue;
                s += std::fabs(double(xv[((n * C + c) * H + ii) * W + jj]) * wv[((o * C + c) * 3 + a) * 3 + d]);
              }
          const size_t k = static_cast<size_t>(((n * O + o) * H + i) * W + j);
          const double bound = (std::ldexp(1.0, -10) + std::ldexp(1.0, -22) + 2 * C * 9 * std::ldexp(1.0, -24)) * s;
          const double e = std::fabs(double(gv[k]) - yv[k]);
          worst = std::max(worst, e / bound);
          any = std::max(any, e);
        }
  EXPECT_LE(worst, 1.0) << "largest error / TF32 bound";
  // TF32 must have been applied at all: fp32 rounding alone is ~1e-7 here.
  EXPECT_GT(any, 1e-5) << "tf32 made no difference: were the inputs rounded?";
  std::printf("tf32 conv: largest error %.3g, %.2f of the TF32 bound\n", any, worst);
}

TEST(VaeEmu, Tf32DecodeWithinTheTf32BoundPerLayer) {
  if (!conv_uses_cudnn()) GTEST_SKIP() << "TF32 convolutions need cuDNN (the hand-written kernel is fp32)";
  // The whole model at tf32: every convolution adds at most ~2^-10 relative
  // (above) to a GroupNorm-normalised signal, so the relative L2 difference
  // of the output is bounded by (number of convolutions on the longest path)
  // x 2^-10; it must be above fp32 rounding (TF32 applied) and the
  // precision must leave the process-wide GEMM setting as it found it.
  const AutoencoderKLConfig cfg = config_of({32, 160}, 1, 32);
  AutoencoderKL cpu = random_vae(cfg, 41);
  const Tensor z = randn({1, 4, 8, 8}, 42, 0, 1.0);
  const Tensor want = cpu.decode(z);
  AutoencoderKL gpu = AutoencoderKL(cpu);
  gpu.to(kGpu);
  gpu.set_precision(VaePrecision::Tf32);
  ASSERT_FALSE(matmul_tf32());
  const Tensor got = gpu.decode(z);
  EXPECT_FALSE(matmul_tf32()) << "the VAE's TF32 scope leaked into the process";
  // post_quant, conv_in, mid (2 resnets x 2 + to_out), 2 levels x 2 resnets x
  // 2 convs + 1 upsampler, conv_out.
  const int convs = 1 + 1 + 5 + 2 * 2 * 2 + 1 + 1;
  const Diff d = diff_of(got, want);
  EXPECT_LE(d.rel_l2, convs * std::ldexp(1.0, -10));
  EXPECT_GT(d.rel_l2, 1e-6) << "tf32 made no difference";
  std::printf("tf32 decode: relative L2 difference %.3g (bound %.3g)\n", d.rel_l2, convs * std::ldexp(1.0, -10));
}

// dittrain sample's VAE decode (diffusion/vae_decode_samples.h) past cuDNN's
// tensor size limit, scaled down: sd-vae's structure at 16 px (2x2
// latents), batch 2, the limit lowered to 2^16 elements. Its three
// convolutions with a [N, 256, 16, 16] tensor (2^16 per image: x and y of
// up_blocks.2.upsamplers.0.conv, x of up_blocks.3.resnets.0.conv1 and of its
// conv_shortcut; every other tensor is at most 2^15 per image, 2 images
// within 2^16) can take only 1 image per cuDNN call: each is cut in 2
// chunks. The images equal the unsplit decode's (the same arithmetic per
// image) and the CPU's within 1e-4. The cut decode runs on a thread of its
// own: cuDNN plans are cached per host thread, and this thread's were made
// without the limit.
TEST(VaeEmu, DecodeCutAlongNUnderALoweredLimitMatchesUnsplit) {
#if !defined(VT_CUDNN_CONV)
  GTEST_SKIP() << "the cut is the cuDNN path's (no cudnn.h in this build)";
#else
  const AutoencoderKLConfig cfg = config_of({128, 256, 512, 512}, 2, 32);
  AutoencoderKL cpu = random_vae(cfg, 51);
  const Tensor z = randn({2, 4, 2, 2}, 52, 0, 1.0);
  const Tensor want = cpu.decode(z);
  AutoencoderKL gpu = cpu;
  gpu.to(kGpu);
  const auto before_whole = cuda::cudnn_conv_counts();
  // Read back before the other thread starts: its per-thread default stream
  // is not ordered after this thread's (the weights' upload, this decode),
  // and the caching allocator pools both threads' default streams as one.
  const Tensor whole = gpu.decode(z).to(Device::cpu());
  ASSERT_EQ(cuda::cudnn_conv_counts().split, before_whole.split) << "the unsplit decode was cut";
  Tensor cut;
  cuda::CudnnConvCounts before{}, after{};
  std::exception_ptr error;
  setenv("VT_EMU_CUDNN_MAX_ELEMENTS", "65536", 1);
  std::thread t([&] {
    try {
      before = cuda::cudnn_conv_counts();
      cut = gpu.decode(z).to(Device::cpu());
      after = cuda::cudnn_conv_counts();
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  unsetenv("VT_EMU_CUDNN_MAX_ELEMENTS");
  if (error) std::rethrow_exception(error);
  EXPECT_EQ(after.split - before.split, 3);
  EXPECT_EQ(after.chunks - before.chunks, 3 * 2);
  EXPECT_EQ(after.refused - before.refused, 0) << "the hand-written kernel ran";
  EXPECT_EQ(cut.to_vector(), whole.to_vector()) << "cut decode differs from the unsplit one";
  expect_agree(cut.to(kGpu), want, 1e-4, "sd-vae decode cut along N");
#endif
}

TEST(VaeEmu, DevicePlacementAndErrors) {
  AutoencoderKL vae = AutoencoderKL::load(kNarrow, kGpu);
  EXPECT_EQ(vae.device(), kGpu);
  const Tensor images = load_safetensors(kNarrow + "/io.safetensors").at("images");
  const AutoencoderKL::Posterior p = vae.encode(images);
  EXPECT_EQ(p.mean.device(), kGpu);
  EXPECT_EQ(p.logvar.device(), kGpu);
  // An fp32 VAE under a process that runs its other GEMMs in TF32 (dittrain
  // precision: tf32): the process-wide setting is back afterwards.
  set_matmul_tf32(true);
  vae.decode(p.mean);
  EXPECT_TRUE(matmul_tf32());
  set_matmul_tf32(false);
  // Back to the CPU: the results follow the model.
  vae.to(Device::cpu());
  EXPECT_EQ(vae.encode(images.to(kGpu)).mean.device(), Device::cpu());
  // tf32 and bf16 need the device, both naming the key (bf16: test_vae_bf16_emu.cpp).
  const std::string m1 = vt_test::error_of([&] { vae.set_precision(VaePrecision::Tf32); });
  EXPECT_NE(m1.find("vae.precision"), std::string::npos) << m1;
  const std::string m2 = vt_test::error_of([&] { AutoencoderKL::load(kNarrow, Device::cpu(), VaePrecision::Bf16); });
  EXPECT_NE(m2.find("vae.precision"), std::string::npos) << m2;
  EXPECT_NE(m2.find("bf16"), std::string::npos) << m2;
  vae.to(kGpu);
  vae.set_precision(VaePrecision::Tf32);
  const std::string m3 = vt_test::error_of([&] { vae.to(Device::cpu()); });
  EXPECT_NE(m3.find("tf32"), std::string::npos) << m3;
}

}  // namespace
}  // namespace vt
