// AutoencoderKL against diffusers (tools/vae_fixture.py): the committed narrow
// fixture (real structure, 8x downsampling, real ImageNet crops) always; the
// sd-vae-ft-ema configuration when VT_VAE_FIXTURE names a folder written by
// `tools/vae_fixture.py --full DIR`. Encode (mean, logvar) and decode (of the
// reference mean) must agree within 1e-4 relative: |got - want| <=
// 1e-4 * (|want| + rms(want)) elementwise, against diffusers' network
// evaluated in float64 (diffusers' own float32 decode is 1.6e-4 from it at
// full size).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/safetensors.h"
#include "test_fs.h"
#include "vae/autoencoder_kl.h"

namespace vt {
namespace {

namespace fs = std::filesystem;
using vt_test::error_of;

const std::string kNarrow = std::string(VT_FIXTURES_DIR) + "/vae/narrow";

void expect_close(const Tensor& want, const Tensor& got, const char* what) {
  ASSERT_EQ(want.shape(), got.shape()) << what;
  const std::vector<float> w = want.to(DType::F32).to_vector(), g = got.contiguous().to_vector();
  double ss = 0, worst = 0;
  for (float v : w) ss += double(v) * v;
  const double rms = std::sqrt(ss / static_cast<double>(w.size()));
  ASSERT_GT(rms, 1e-3) << what << " reference is degenerate";
  for (size_t i = 0; i < w.size(); ++i) {
    const double err = std::fabs(double(g[i]) - w[i]) / (std::fabs(w[i]) + rms);
    worst = std::max(worst, err);
    if (!(err <= 1e-4)) {
      ADD_FAILURE() << what << "[" << i << "]: got " << g[i] << ", want " << w[i] << " (rms " << rms << ")";
      return;
    }
  }
  std::printf("%s: worst relative error %.2e (rms %.3f)\n", what, worst, rms);
}

void check_fixture(const std::string& dir) {
  const AutoencoderKL vae = AutoencoderKL::load(dir);
  const auto io = load_safetensors(dir + "/io.safetensors");
  const AutoencoderKL::Posterior p = vae.encode(io.at("images"));
  expect_close(io.at("mean"), p.mean, "mean");
  expect_close(io.at("logvar"), p.logvar, "logvar");
  expect_close(io.at("decoded"), vae.decode(io.at("mean")), "decoded");
}

TEST(VaeParity, NarrowMatchesDiffusers) { check_fixture(kNarrow); }

TEST(VaeParity, SdVaeConfigurationMatchesDiffusers) {
  const char* dir = std::getenv("VT_VAE_FIXTURE");
  if (!dir || !*dir) GTEST_SKIP() << "set VT_VAE_FIXTURE to a folder from tools/vae_fixture.py --full";
  check_fixture(dir);
}

TEST(VaeParity, EncodeDecodeBatchRowsAreIndependent) {
  // One image alone gives the same posterior as inside the batch.
  const AutoencoderKL vae = AutoencoderKL::load(kNarrow);
  const Tensor images = load_safetensors(kNarrow + "/io.safetensors").at("images");
  const Tensor both = vae.encode(images).mean, one = vae.encode(images.slice(0, 1, 2).contiguous()).mean;
  const std::vector<float> a = both.slice(0, 1, 2).contiguous().to_vector(), b = one.to_vector();
  for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(a[i], b[i], 1e-5f * (1.f + std::fabs(a[i])));
}

// A copy of the narrow fixture to break.
struct BrokenCopy {
  vt_test::TmpDir tmp;
  std::string dir = tmp.path() + "/vae";
  BrokenCopy() {
    fs::create_directories(dir);
    fs::copy_file(kNarrow + "/config.json", dir + "/config.json");
    fs::copy_file(kNarrow + "/diffusion_pytorch_model.safetensors", dir + "/diffusion_pytorch_model.safetensors");
  }
  void write_config(const std::string& text) const { std::ofstream(dir + "/config.json") << text; }
};

// The state dict a configuration reads is the one diffusers wrote for it
// (the narrow fixture's weights file: names and shapes).
TEST(VaeLoad, StateDictShapesAreDiffusersState) {
  const auto sd = load_safetensors(kNarrow + "/diffusion_pytorch_model.safetensors");
  const auto shapes = AutoencoderKL::state_dict_shapes(AutoencoderKLConfig::from_json_file(kNarrow + "/config.json"));
  ASSERT_EQ(shapes.size(), sd.size());
  for (const auto& [name, t] : sd) {
    auto it = shapes.find(name);
    ASSERT_NE(it, shapes.end()) << name;
    EXPECT_EQ(it->second, t.shape()) << name;
  }
}

TEST(VaeLoad, ErrorsNameFileAndTensor) {
  EXPECT_NE(error_of([] { AutoencoderKL::load("/nonexistent_vae_dir"); }).find("/nonexistent_vae_dir"),
            std::string::npos);
  {
    BrokenCopy b;
    fs::remove(b.dir + "/diffusion_pytorch_model.safetensors");
    const std::string msg = error_of([&] { AutoencoderKL::load(b.dir); });
    EXPECT_NE(msg.find("diffusion_pytorch_model.safetensors"), std::string::npos) << msg;
  }
  {
    // A checkpoint with other channel counts than config.json states.
    BrokenCopy b;
    b.write_config(R"({"block_out_channels": [8, 8, 16, 32], "norm_num_groups": 4})");
    const std::string msg = error_of([&] { AutoencoderKL::load(b.dir); });
    EXPECT_NE(msg.find("diffusion_pytorch_model.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find("encoder.down_blocks.3.resnets.0"), std::string::npos) << msg;
  }
  {
    // No config.json: the sd-vae defaults (128 channels) do not fit the narrow weights.
    BrokenCopy b;
    fs::remove(b.dir + "/config.json");
    const std::string msg = error_of([&] { AutoencoderKL::load(b.dir); });
    EXPECT_NE(msg.find("'encoder.conv_in.weight'"), std::string::npos) << msg;
  }
  {
    BrokenCopy b;
    b.write_config(R"({"block_out_channels": [8, 8, 16, 16], "norm_num_groups": 4, "latent_channels": "four"})");
    const std::string msg = error_of([&] { AutoencoderKL::load(b.dir); });
    EXPECT_NE(msg.find("config.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'latent_channels'"), std::string::npos) << msg;
  }
  {
    // Strict: a tensor missing, or one left over.
    BrokenCopy b;
    const std::string w = b.dir + "/diffusion_pytorch_model.safetensors";
    auto sd = load_safetensors(w);
    sd.erase("decoder.mid_block.attentions.0.to_k.bias");
    save_safetensors(w, {sd.begin(), sd.end()});
    EXPECT_NE(error_of([&] { AutoencoderKL::load(b.dir); }).find("'decoder.mid_block.attentions.0.to_k.bias'"),
              std::string::npos);
    sd = load_safetensors(kNarrow + "/diffusion_pytorch_model.safetensors");
    sd.emplace("encoder.extra.weight", Tensor::zeros({2}));
    save_safetensors(w, {sd.begin(), sd.end()});
    EXPECT_NE(error_of([&] { AutoencoderKL::load(b.dir); }).find("'encoder.extra.weight'"), std::string::npos);
  }
}

TEST(VaeLoad, AcceptsDeprecatedAttentionNames) {
  // sd-vae-ft-ema's file on the Hub names the mid-block attention
  // query/key/value/proj_attn; they load as to_q/to_k/to_v/to_out.0.
  BrokenCopy b;
  const std::string w = b.dir + "/diffusion_pytorch_model.safetensors";
  std::map<std::string, Tensor> renamed;
  for (auto& [k, v] : load_safetensors(w)) {
    std::string n = k;
    for (auto [now, old] : {std::pair<std::string, std::string>{".to_q.", ".query."}, {".to_k.", ".key."},
                            {".to_v.", ".value."}, {".to_out.0.", ".proj_attn."}}) {
      const size_t at = n.find(now);
      if (at != std::string::npos) n = n.substr(0, at) + old + n.substr(at + now.size());
    }
    renamed.emplace(n, v);
  }
  ASSERT_TRUE(renamed.count("encoder.mid_block.attentions.0.proj_attn.weight"));
  save_safetensors(w, {renamed.begin(), renamed.end()});
  const auto io = load_safetensors(kNarrow + "/io.safetensors");
  expect_close(io.at("mean"), AutoencoderKL::load(b.dir).encode(io.at("images")).mean, "mean (old names)");
}

}  // namespace
}  // namespace vt
