// diffusers' AutoencoderKL (diffusers/models/autoencoders/autoencoder_kl.py
// with Encoder/Decoder of autoencoders/vae.py), the Stable Diffusion VAE that
// DiT encodes ImageNet with and decodes its samples with
// (stabilityai/sd-vae-ft-ema or -mse: 8x downsampling, 4 latent channels,
// latents scaled by 0.18215 for the diffusion model). Forward only: frozen.
//
// Encoder: conv_in; down_blocks.i (DownEncoderBlock2D: layers_per_block
// ResnetBlock2D, then, except in the last, downsamplers.0, a stride-2 3x3 conv
// after padding (0, 1, 0, 1)); mid_block (ResnetBlock2D, self-attention,
// ResnetBlock2D); conv_norm_out, SiLU, conv_out to 2 * latent_channels;
// quant_conv (1x1). The moments split into mean and logvar, logvar clamped
// to [-30, 20] (DiagonalGaussianDistribution).
// Decoder: post_quant_conv (1x1); conv_in; mid_block; up_blocks.i over the
// reversed channels (UpDecoderBlock2D: layers_per_block + 1 ResnetBlock2D,
// then, except in the last, upsamplers.0: nearest 2x and a 3x3 conv);
// conv_norm_out, SiLU, conv_out.
//
// Weights: the checkpoint folder's diffusion_pytorch_model.safetensors with
// diffusers' state-dict names ("encoder.down_blocks.0.resnets.0.norm1.weight",
// "decoder.mid_block.attentions.0.to_q.weight", "quant_conv.weight", ...),
// loaded strictly: every tensor must be present with its shape, and none may
// be left over. Configuration: the folder's config.json (see
// autoencoder_kl_config.h); without one, the sd-vae-ft-* defaults.
// Users get the weights from the Hugging Face Hub (stabilityai/sd-vae-ft-ema);
// nothing is downloaded here.
//
// Errors: std::runtime_error naming the file (and key or tensor): a missing
// folder or safetensors file, a bad config.json, a tensor missing, unexpected
// or of another shape (e.g. other channel counts than config.json says);
// std::invalid_argument naming the tensor for inputs of the wrong shape.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "vae/autoencoder_kl_config.h"
#include "vae/vae_blocks.h"

namespace vt {

class AutoencoderKL {
 public:
  // `path`: a checkpoint folder (config.json optional,
  // diffusion_pytorch_model.safetensors required), or a .safetensors file
  // (then config.json is looked for beside it).
  static AutoencoderKL load(const std::string& path);
  AutoencoderKL(const AutoencoderKLConfig& config, std::map<std::string, Tensor> state_dict,
                const std::string& source);

  const AutoencoderKLConfig& config() const { return cfg_; }

  // Posterior of images [N, in_channels, H, W] F32 in [-1, 1] (contiguous CPU):
  // mean and logvar [N, latent_channels, ceil(H / f), ceil(W / f)],
  // f = config().downsample_factor(); logvar clamped to [-30, 20]. Unscaled
  // (multiply a sample by scaling_factor for DiT).
  struct Posterior {
    Tensor mean, logvar;
  };
  Posterior encode(const Tensor& images) const;
  // Images [N, out_channels, f h, f w] (nominally [-1, 1], not clamped) from
  // unscaled latents z [N, latent_channels, h, w].
  Tensor decode(const Tensor& z) const;

 private:
  AutoencoderKLConfig cfg_;
  struct Encoder {
    Conv2dLayer conv_in, conv_out;
    std::vector<std::vector<ResnetBlock2D>> resnets;  // [level][layer]
    std::vector<Conv2dLayer> downsamplers;            // levels - 1
    MidBlock2D mid;
    GroupNormLayer norm_out;
  } enc_;
  struct Decoder {
    Conv2dLayer conv_in, conv_out;
    MidBlock2D mid;
    std::vector<std::vector<ResnetBlock2D>> resnets;  // [level][layer]
    std::vector<Conv2dLayer> upsamplers;              // levels - 1
    GroupNormLayer norm_out;
  } dec_;
  bool has_quant_ = true, has_post_quant_ = true;
  Conv2dLayer quant_conv_, post_quant_conv_;
};

}  // namespace vt
