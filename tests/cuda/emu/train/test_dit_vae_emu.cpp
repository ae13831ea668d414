// dittrain's VAE commands with the VAE on emulated CUDA against the CPU, on
// the committed narrow AutoencoderKL fixture (tools/vae_fixture.py) and real
// ImageNet photos: `dittrain extract` (pinned uploads, posteriors brought
// back for the shards) writes the CPU's posteriors to fp32 rounding and
// records vae_precision, a TF32 extraction into an fp32 folder is refused
// naming the key, and `dittrain sample`'s decoding (vae_decode_to_uint8)
// gives the CPU's pixels up to one level where fp32 rounding crosses a
// rounding boundary. On a device without room for a batch, extraction names
// batch= and writes no shard.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/out_of_memory.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "diffusion/latent_extract.h"
#include "diffusion/vae_decode_samples.h"
#include "diffusion/extract_test_util.h"
#include "test_fs.h"

namespace vt {
namespace {
namespace fs = std::filesystem;

using vt_test::kImagenetSamples;
using vt_test::kNarrowVae;

// The three fixture photos, each image also mirrored.
ExtractOptions options(const std::string& images, const std::string& out) {
  ExtractOptions o = vt_test::extract_options(images, out);  // two per VAE call: a full batch and a partial one
  o.hflip_copies = true;
  return o;
}
std::string make_folder(const vt_test::TmpDir& tmp) { return vt_test::make_sample_folder(tmp, 3); }

TEST(DitVaeEmu, ExtractOnCudaWritesTheCpuPosteriors) {
  if (!fs::is_directory(kImagenetSamples)) GTEST_SKIP() << kImagenetSamples << " missing";
  vt_test::TmpDir tmp;
  const std::string images = make_folder(tmp);
  const AutoencoderKL cpu = AutoencoderKL::load(kNarrowVae);
  const AutoencoderKL gpu = AutoencoderKL::load(kNarrowVae, Device::cuda(0), VaePrecision::Fp32);
  ASSERT_EQ(extract_latents(cpu, options(images, tmp.path() + "/cpu")).rows, 6);
  ASSERT_EQ(extract_latents(gpu, options(images, tmp.path() + "/gpu")).rows, 6);
  SafetensorsReader rc(tmp.path() + "/cpu/shard_00000.safetensors"), rg(tmp.path() + "/gpu/shard_00000.safetensors");
  const Tensor pc = rc.load("posterior"), pg = rg.load("posterior");
  ASSERT_EQ(pc.shape(), pg.shape());
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < pc.numel(); ++i) {
    worst = std::max(worst, std::fabs(double(pg.f32()[i]) - pc.f32()[i]));
    scale = std::max(scale, std::fabs(double(pc.f32()[i])));
  }
  EXPECT_LT(worst / scale, 1e-4) << "posterior rel max diff";
  const Tensor lc = rc.load("labels"), lg = rg.load("labels");
  EXPECT_TRUE(std::equal(lc.data<int64_t>(), lc.data<int64_t>() + lc.numel(), lg.data<int64_t>()));
  EXPECT_EQ(rc.metadata().at("vae_precision"), "fp32");
  EXPECT_EQ(rg.metadata().at("vae_precision"), "fp32");

  // TF32 latents are another arithmetic: not mixed into an fp32 folder.
  const AutoencoderKL tf32 = AutoencoderKL::load(kNarrowVae, Device::cuda(0), VaePrecision::Tf32);
  fs::remove(tmp.path() + "/gpu/shard_00000.safetensors");
  // One shard of 3 images: write a two-shard folder so one shard exists.
  ExtractOptions two = options(images, tmp.path() + "/two");
  two.shard_size = 2;
  extract_latents(gpu, two);
  fs::remove(tmp.path() + "/two/shard_00001.safetensors");
  try {
    extract_latents(tf32, two);
    FAIL() << "a tf32 extraction continued an fp32 folder";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("was made with vae_precision = 'fp32'; this run has vae_precision = 'tf32'"), std::string::npos) << e.what();
  }
}

TEST(DitVaeEmu, SampleDecodingOnCudaGivesTheCpuPixels) {
  const AutoencoderKL cpu = AutoencoderKL::load(kNarrowVae);
  const AutoencoderKL gpu = AutoencoderKL::load(kNarrowVae, Device::cuda(0), VaePrecision::Fp32);
  Tensor z = Tensor::empty({3, 4, 8, 8});
  Philox rng(3, 0);
  for (int64_t i = 0; i < z.numel(); ++i) z.f32()[i] = static_cast<float>(rng.normal());
  const Tensor uc = vae_decode_to_uint8(cpu, z, 2, "test"), ug = vae_decode_to_uint8(gpu, z, 2, "test");
  ASSERT_EQ(ug.shape(), (Shape{3, 64, 64, 3}));
  ASSERT_TRUE(ug.device().is_cpu());
  int64_t differ = 0, worst = 0;
  for (int64_t i = 0; i < uc.numel(); ++i) {
    const int64_t d = std::abs(int64_t(uc.u8()[i]) - int64_t(ug.u8()[i]));
    differ += d != 0;
    worst = std::max(worst, d);
  }
  EXPECT_LE(worst, 1);
  EXPECT_LT(differ, uc.numel() / 100) << "pixels off by one";
}

TEST(DitVaeEmu, ExtractOutOfMemoryNamesBatchAndWritesNothing) {
  if (!fs::is_directory(kImagenetSamples)) GTEST_SKIP() << kImagenetSamples << " missing";
  vt_test::TmpDir tmp;
  const std::string images = make_folder(tmp);
  const AutoencoderKL gpu = AutoencoderKL::load(kNarrowVae, Device::cuda(0), VaePrecision::Fp32);
  cuda_empty_cache();
  setenv("VT_EMU_MEMORY_BYTES", std::to_string(cuda_bytes_in_use() + 256).c_str(), 1);  // the weights, no more
  try {
    extract_latents(gpu, options(images, tmp.path() + "/lat"));
    unsetenv("VT_EMU_MEMORY_BYTES");
    FAIL() << "extracted on a device without room";
  } catch (const OutOfMemory& e) {
    unsetenv("VT_EMU_MEMORY_BYTES");
    const std::string m = e.what();
    for (const char* want : {"extract: batch=2 (images per VAE call; lower it)", "CUDA out of memory"})
      EXPECT_NE(m.find(want), std::string::npos) << "'" << want << "' missing from: " << m;
  }
  EXPECT_FALSE(fs::exists(tmp.path() + "/lat/shard_00000.safetensors"));
}

}  // namespace
}  // namespace vt
