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
// (below), and the whole decode within that bound per layer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "core/philox.h"
#include "core/safetensors.h"
#include "kernels/attention.h"
#include "kernels/conv.h"
#include "kernels/matmul.h"
#include "test_fs.h"
#include "vae/autoencoder_kl.h"

namespace vt {
namespace {

const Device kGpu = Device::cuda(0);
const std::string kNarrow = std::string(VT_FIXTURES_DIR) + "/vae/narrow";

// N(mean, std) values of `shape` from Philox(seed, stream).
Tensor randn(const Shape& shape, uint64_t seed, uint64_t stream, double std, double mean = 0.0) {
  Tensor t = Tensor::empty(shape);
  Philox rng(seed, stream);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.normal(mean, std));
  return t;
}

// A diffusers AutoencoderKL state dict for `cfg` with random weights: the
// names and shapes of diffusers' Encoder/Decoder (autoencoders/vae.py), so
// the strict loader rejects any mismatch. Convolutions ~ N(0, 1/fan_in)
// keep activations O(1); GroupNorm weights near 1.
struct RandomWeights {
  const AutoencoderKLConfig& cfg;
  uint64_t seed;
  std::map<std::string, Tensor> sd;
  uint64_t stream = 0;

  void conv(const std::string& p, int64_t cin, int64_t cout, int64_t k) {
    sd[p + ".weight"] = randn({cout, cin, k, k}, seed, ++stream, 1.0 / std::sqrt(double(cin * k * k)));
    sd[p + ".bias"] = randn({cout}, seed, ++stream, 0.1);
  }
  void linear(const std::string& p, int64_t c) {
    sd[p + ".weight"] = randn({c, c}, seed, ++stream, 1.0 / std::sqrt(double(c)));
    sd[p + ".bias"] = randn({c}, seed, ++stream, 0.1);
  }
  void norm(const std::string& p, int64_t c) {
    sd[p + ".weight"] = randn({c}, seed, ++stream, 0.1, 1.0);
    sd[p + ".bias"] = randn({c}, seed, ++stream, 0.1);
  }
  void resnet(const std::string& p, int64_t cin, int64_t cout) {
    norm(p + ".norm1", cin);
    conv(p + ".conv1", cin, cout, 3);
    norm(p + ".norm2", cout);
    conv(p + ".conv2", cout, cout, 3);
    if (cin != cout) conv(p + ".conv_shortcut", cin, cout, 1);
  }
  void mid(const std::string& p, int64_t c) {
    resnet(p + ".resnets.0", c, c);
    norm(p + ".attentions.0.group_norm", c);
    for (const char* n : {".to_q", ".to_k", ".to_v", ".to_out.0"}) linear(p + ".attentions.0" + n, c);
    resnet(p + ".resnets.1", c, c);
  }
  std::map<std::string, Tensor> build() {
    const auto& ch = cfg.block_out_channels;
    const size_t levels = ch.size();
    const int64_t lat = cfg.latent_channels;
    conv("encoder.conv_in", cfg.in_channels, ch[0], 3);
    int64_t cin = ch[0];
    for (size_t i = 0; i < levels; ++i) {
      const std::string p = "encoder.down_blocks." + std::to_string(i);
      for (int64_t j = 0; j < cfg.layers_per_block; ++j, cin = ch[i])
        resnet(p + ".resnets." + std::to_string(j), cin, ch[i]);
      if (i + 1 < levels) conv(p + ".downsamplers.0.conv", ch[i], ch[i], 3);
    }
    mid("encoder.mid_block", ch.back());
    norm("encoder.conv_norm_out", ch.back());
    conv("encoder.conv_out", ch.back(), 2 * lat, 3);
    conv("quant_conv", 2 * lat, 2 * lat, 1);
    conv("post_quant_conv", lat, lat, 1);
    conv("decoder.conv_in", lat, ch.back(), 3);
    mid("decoder.mid_block", ch.back());
    cin = ch.back();
    for (size_t i = 0; i < levels; ++i) {
      const int64_t cout = ch[levels - 1 - i];
      const std::string p = "decoder.up_blocks." + std::to_string(i);
      for (int64_t j = 0; j <= cfg.layers_per_block; ++j, cin = cout)
        resnet(p + ".resnets." + std::to_string(j), cin, cout);
      if (i + 1 < levels) conv(p + ".upsamplers.0.conv", cout, cout, 3);
    }
    norm("decoder.conv_norm_out", ch[0]);
    conv("decoder.conv_out", ch[0], cfg.out_channels, 3);
    return sd;
  }
};

AutoencoderKLConfig config_of(std::vector<int64_t> channels, int64_t layers, int64_t groups) {
  AutoencoderKLConfig c;
  c.block_out_channels = std::move(channels);
  c.layers_per_block = layers;
  c.norm_num_groups = groups;
  return c;
}

AutoencoderKL random_vae(const AutoencoderKLConfig& cfg, uint64_t seed) {
  return AutoencoderKL(cfg, RandomWeights{cfg, seed, {}}.build(), "random");
}

struct Diff {
  double max_abs = 0, rms_want = 0, rel_l2 = 0;
};
Diff diff_of(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  double se = 0, sw = 0;
  Diff d;
  for (size_t i = 0; i < w.size(); ++i) {
    const double e = std::fabs(double(g[i]) - w[i]);
    d.max_abs = std::isnan(e) ? INFINITY : std::max(d.max_abs, e);
    se += e * e;
    sw += double(w[i]) * w[i];
  }
  d.rms_want = std::sqrt(sw / double(w.size()));
  d.rel_l2 = std::sqrt(se / std::max(sw, 1e-300));
  return d;
}

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
  // tf32 needs the device; bf16 is refused, both naming the key.
  const std::string m1 = vt_test::error_of([&] { vae.set_precision(VaePrecision::Tf32); });
  EXPECT_NE(m1.find("vae.precision"), std::string::npos) << m1;
  const std::string m2 = vt_test::error_of([&] { AutoencoderKL::load(kNarrow, kGpu, VaePrecision::Bf16); });
  EXPECT_NE(m2.find("vae.precision"), std::string::npos) << m2;
  EXPECT_NE(m2.find("bf16"), std::string::npos) << m2;
  vae.to(kGpu);
  vae.set_precision(VaePrecision::Tf32);
  const std::string m3 = vt_test::error_of([&] { vae.to(Device::cpu()); });
  EXPECT_NE(m3.find("tf32"), std::string::npos) << m3;
}

}  // namespace
}  // namespace vt
