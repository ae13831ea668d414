// The configuration of diffusers' AutoencoderKL as its checkpoint folder's
// config.json states it (diffusers/models/autoencoders/autoencoder_kl.py,
// AutoencoderKL.__init__). Defaults are those of stabilityai/sd-vae-ft-ema
// and -mse, the VAE of DiT: block_out_channels [128, 256, 512, 512],
// layers_per_block 2, latent_channels 4, norm_num_groups 32, in/out
// channels 3, scaling_factor 0.18215.
//
// Keys read (others, such as _class_name, sample_size or force_upcast, are
// ignored): in_channels, out_channels, latent_channels, block_out_channels,
// layers_per_block, norm_num_groups, act_fn (must be "silu"),
// down_block_types (all "DownEncoderBlock2D"), up_block_types (all
// "UpDecoderBlock2D"), scaling_factor, shift_factor (null or 0: DiT's VAE has
// none), use_quant_conv, use_post_quant_conv, mid_block_add_attention.
//
// Errors: std::runtime_error "VAE config '<file>': key '<key>' ..." for a
// file that is not JSON, a wrong type or an unsupported value.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt {

struct AutoencoderKLConfig {
  int64_t in_channels = 3;
  int64_t out_channels = 3;
  int64_t latent_channels = 4;
  std::vector<int64_t> block_out_channels = {128, 256, 512, 512};
  int64_t layers_per_block = 2;
  int64_t norm_num_groups = 32;
  double scaling_factor = 0.18215;
  bool use_quant_conv = true;
  bool use_post_quant_conv = true;
  bool mid_block_add_attention = true;

  // Spatial downsampling factor of the encoder: 2^(len(block_out_channels) - 1).
  int64_t downsample_factor() const { return int64_t{1} << (block_out_channels.size() - 1); }

  // Parses config.json text; `source` names the file in errors.
  static AutoencoderKLConfig from_json_text(const std::string& text, const std::string& source);
  static AutoencoderKLConfig from_json_file(const std::string& path);
  // Throws naming `source` and the key when a value is out of range.
  void validate(const std::string& source) const;
};

}  // namespace vt
