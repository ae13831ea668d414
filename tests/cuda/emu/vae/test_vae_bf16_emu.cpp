// The VAE at precision bf16 (vae/vae_precision.h: diffusers'
// vae.to(torch.bfloat16)) on emulated CUDA against the same model in fp32 on
// the CPU: encode (mean, logvar) and decode of the narrow fixture and of
// sd-vae-ft-ema's structure at 16 px.
//
// The bound. bf16 keeps 8 significant bits, so every stored value carries a
// relative rounding error of at most u = 2^-8 (round to nearest). Along the
// model, each site where a value is stored in bf16 adds such an error to
// the signal, relative to its size; GroupNorm re-normalises the signal at
// every block, so (to first order) the errors neither grow nor shrink and
// the output's relative error is at most the sum over the sites S on the
// longest path: rel_l2 <= S u. Sites per layer:
//   the F32 input rounded on entry                              1
//   convolution: the weights, the conv output, the bias add     3
//   GroupNorm(+SiLU) output                                     1
//   residual add                                                1
//   ResnetBlock2D: norm1, conv1, norm2, conv2, add              9
//   mid attention: group_norm 1, to_q/k/v weights 1 and output
//     1, probabilities 1, attention output 1, to_out 3, add 1   9
// (the shortcut conv runs beside conv1/conv2, not after them; upsampling
// copies). Independent roundings add in quadrature, not linearly, so the
// measured error is expected near sqrt(S) u (printed beside the bound).
// bf16 must also differ from fp32 by far more than fp32 rounding (the path
// ran), and its results are F32 tensors holding bf16 values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "core/safetensors.h"
#include "kernels/conv.h"
#include "test_fs.h"
#include "vae/autoencoder_kl.h"
#include "vae_emu_models.h"

namespace vt {
namespace {

using namespace vae_emu;

const double kU = std::ldexp(1.0, -8);

// Rounding sites on the longest path (see above).
int mid_sites(const AutoencoderKLConfig& c) { return 9 + (c.mid_block_add_attention ? 9 : 0) + 9; }
int encoder_sites(const AutoencoderKLConfig& c) {
  const int levels = static_cast<int>(c.block_out_channels.size());
  return 1 + 3 + levels * static_cast<int>(c.layers_per_block) * 9 + (levels - 1) * 3 + mid_sites(c) + 1 + 3 +
         (c.use_quant_conv ? 3 : 0);
}
int decoder_sites(const AutoencoderKLConfig& c) {
  const int levels = static_cast<int>(c.block_out_channels.size());
  return 1 + (c.use_post_quant_conv ? 3 : 0) + 3 + mid_sites(c) +
         levels * static_cast<int>(c.layers_per_block + 1) * 9 + (levels - 1) * 3 + 1 + 3;
}

// Every value of t is a bf16 number (its low 16 bits are zero).
bool holds_bf16_values(const Tensor& t) {
  for (float v : t.to_vector()) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if (bits & 0xffffu) return false;
  }
  return true;
}

void expect_bf16_close(const Tensor& got, const Tensor& want, int sites, const std::string& what) {
  ASSERT_EQ(got.device(), kGpu) << what;
  ASSERT_EQ(got.dtype(), DType::F32) << what;
  EXPECT_TRUE(holds_bf16_values(got)) << what << ": not bf16 values";
  const Diff d = diff_of(got, want);
  EXPECT_GT(d.rms_want, 0.05) << what << " reference is degenerate";
  EXPECT_LE(d.rel_l2, sites * kU) << what;
  EXPECT_GT(d.rel_l2, std::ldexp(1.0, -14)) << what << ": bf16 made no difference";
  std::printf("%s: relative L2 difference %.3g (bound S u = %.3g, S = %d; sqrt(S) u = %.3g), max abs %.3g\n",
              what.c_str(), d.rel_l2, sites * kU, sites, std::sqrt(double(sites)) * kU, d.max_abs);
}

void check_bf16(const AutoencoderKL& cpu, const Tensor& images, const std::string& name) {
  const AutoencoderKL::Posterior pc = cpu.encode(images);
  const Tensor dc = cpu.decode(pc.mean);
  AutoencoderKL gpu = cpu;
  gpu.to(kGpu);
  gpu.set_precision(VaePrecision::Bf16);
  const AutoencoderKL::Posterior pg = gpu.encode(images);
  const int se = encoder_sites(cpu.config()), sd = decoder_sites(cpu.config());
  expect_bf16_close(pg.mean, pc.mean, se, name + " mean");
  expect_bf16_close(pg.logvar, pc.logvar, se, name + " logvar");
  expect_bf16_close(gpu.decode(pc.mean), dc, sd, name + " decoded");
  // Back to fp32: re-derived from the F32 masters, equal to the CPU again.
  gpu.set_precision(VaePrecision::Fp32);
  EXPECT_LE(diff_of(gpu.decode(pc.mean), dc).max_abs, 1e-4) << name << ": fp32 after bf16";
}

TEST(VaeBf16Emu, NarrowFixtureWithinTheBf16Bound) {
  const Tensor images = load_safetensors(kNarrow + "/io.safetensors").at("images");
  check_bf16(AutoencoderKL::load(kNarrow), images, "narrow bf16");
}

TEST(VaeBf16Emu, SdVaeStructureWithinTheBf16Bound) {
  // Mid attention of width 512: the probabilities path with bf16 q, k, v.
  const AutoencoderKLConfig cfg = config_of({128, 256, 512, 512}, 2, 32);
  check_bf16(random_vae(cfg, 21), randn({1, 3, 16, 16}, 22, 0, 0.5), "sd-vae bf16");
}

TEST(VaeBf16Emu, Bf16NeedsACudaDevice) {
  const std::string m1 = vt_test::error_of([&] { AutoencoderKL::load(kNarrow, Device::cpu(), VaePrecision::Bf16); });
  EXPECT_NE(m1.find("vae.precision"), std::string::npos) << m1;
  EXPECT_NE(m1.find("bf16"), std::string::npos) << m1;
  AutoencoderKL cpu = AutoencoderKL::load(kNarrow);
  const std::string m2 = vt_test::error_of([&] { cpu.set_precision(VaePrecision::Bf16); });
  EXPECT_NE(m2.find("vae.precision"), std::string::npos) << m2;
  EXPECT_EQ(cpu.precision(), VaePrecision::Fp32);
  AutoencoderKL gpu = AutoencoderKL::load(kNarrow, kGpu, VaePrecision::Bf16);
  EXPECT_EQ(gpu.precision(), VaePrecision::Bf16);
  const std::string m3 = vt_test::error_of([&] { gpu.to(Device::cpu()); });
  EXPECT_NE(m3.find("bf16"), std::string::npos) << m3;
  EXPECT_EQ(gpu.device(), kGpu);
}

}  // namespace
}  // namespace vt
