// config.json parsing of the VAE: the sd-vae-ft-ema file as published,
// defaults, and errors that name the file and the key.
#include <gtest/gtest.h>

#include "test_fs.h"
#include "vae/autoencoder_kl_config.h"

namespace vt {
namespace {

using vt_test::error_of;

// stabilityai/sd-vae-ft-ema/config.json as published on the Hub.
const char* kSdVaeFtEma = R"({
  "_class_name": "AutoencoderKL",
  "_diffusers_version": "0.4.2",
  "act_fn": "silu",
  "block_out_channels": [128, 256, 512, 512],
  "down_block_types": ["DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D"],
  "in_channels": 3,
  "latent_channels": 4,
  "layers_per_block": 2,
  "norm_num_groups": 32,
  "out_channels": 3,
  "sample_size": 256,
  "up_block_types": ["UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D", "UpDecoderBlock2D"]
})";

TEST(VaeConfig, ParsesSdVaeFtEma) {
  const AutoencoderKLConfig c = AutoencoderKLConfig::from_json_text(kSdVaeFtEma, "config.json");
  EXPECT_EQ(c.block_out_channels, (std::vector<int64_t>{128, 256, 512, 512}));
  EXPECT_EQ(c.layers_per_block, 2);
  EXPECT_EQ(c.latent_channels, 4);
  EXPECT_EQ(c.norm_num_groups, 32);
  EXPECT_EQ(c.downsample_factor(), 8);
  EXPECT_DOUBLE_EQ(c.scaling_factor, 0.18215);  // absent from this file: diffusers' default
  EXPECT_TRUE(c.use_quant_conv && c.use_post_quant_conv && c.mid_block_add_attention);
}

TEST(VaeConfig, ReadsNarrowConfiguration) {
  const AutoencoderKLConfig c = AutoencoderKLConfig::from_json_text(
      R"({"block_out_channels": [8, 8, 16, 16], "norm_num_groups": 4, "layers_per_block": 1,
          "scaling_factor": 0.5, "shift_factor": null, "mid_block_add_attention": false})",
      "narrow.json");
  EXPECT_EQ(c.block_out_channels, (std::vector<int64_t>{8, 8, 16, 16}));
  EXPECT_EQ(c.norm_num_groups, 4);
  EXPECT_EQ(c.layers_per_block, 1);
  EXPECT_DOUBLE_EQ(c.scaling_factor, 0.5);
  EXPECT_FALSE(c.mid_block_add_attention);
}

TEST(VaeConfig, ErrorsNameFileAndKey) {
  struct Bad {
    const char* json;
    const char* key;
  };
  const Bad cases[] = {
      {R"({"latent_channels": "4"})", "latent_channels"},
      {R"({"block_out_channels": [128, 250]})", "block_out_channels"},  // not a multiple of 32 groups
      {R"({"block_out_channels": 128})", "block_out_channels"},
      {R"({"act_fn": "relu"})", "act_fn"},
      {R"({"down_block_types": ["DownBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D", "DownEncoderBlock2D"]})",
       "down_block_types"},
      {R"({"up_block_types": ["UpDecoderBlock2D"]})", "up_block_types"},
      {R"({"shift_factor": 0.1159})", "shift_factor"},
      {R"({"layers_per_block": 0})", "layers_per_block"},
      {R"({"use_quant_conv": 1})", "use_quant_conv"},
  };
  for (const Bad& b : cases) {
    const std::string msg = error_of([&] { AutoencoderKLConfig::from_json_text(b.json, "vae/config.json"); });
    EXPECT_NE(msg.find("'vae/config.json'"), std::string::npos) << b.json << " -> " << msg;
    EXPECT_NE(msg.find(std::string("'") + b.key + "'"), std::string::npos) << b.json << " -> " << msg;
  }
  EXPECT_NE(error_of([] { AutoencoderKLConfig::from_json_text("{not json", "x/config.json"); }).find("x/config.json"),
            std::string::npos);
  EXPECT_NE(error_of([] { AutoencoderKLConfig::from_json_file("/nonexistent_vae/config.json"); })
                .find("/nonexistent_vae/config.json"),
            std::string::npos);
}

}  // namespace
}  // namespace vt
