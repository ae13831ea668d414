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
// Devices: the weights are loaded on the host and uploaded once to the
// device given to load() or to() (CPU by default); encode and decode then
// run every layer there (one code path: kernels/ dispatch on the tensors'
// device; on CUDA the convolutions go through cuDNN when built, GroupNorm,
// upsampling, the clamp through their CUDA twins, the mid-block attention
// through cuBLAS). Their input may live on the CPU or on any device: it is
// copied to the VAE's device first; the results are on the VAE's device.
// precision (vae_precision.h): fp32 (default; equal to the CPU to fp32
// rounding), or tf32 or bf16 on CUDA. bf16 follows diffusers'
// vae.to(torch.bfloat16): weights and activations bf16 (vae_blocks.h), the
// F32 input rounded to bf16 on entry, every layer's output rounded to bf16,
// and the results (mean, logvar, images) returned as F32 tensors holding
// the bf16 values, so callers see the same dtypes at every precision.
// The F32 master weights stay on the host (host memory: 4 bytes per
// parameter, 335 MB for sd-vae-ft-*); the device holds what the precision
// computes with (4 or, for bf16, 2 bytes per weight).
//
// Errors: std::runtime_error naming the file (and key or tensor): a missing
// folder or safetensors file, a bad config.json, a tensor missing, unexpected
// or of another shape (e.g. other channel counts than config.json says);
// std::invalid_argument naming the tensor for inputs of the wrong shape, and
// naming vae.precision for tf32 or bf16 on the CPU.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "vae/autoencoder_kl_config.h"
#include "vae/vae_blocks.h"
#include "vae/vae_precision.h"

namespace vt {

class AutoencoderKL {
 public:
  // `path`: a checkpoint folder (config.json optional,
  // diffusion_pytorch_model.safetensors required), or a .safetensors file
  // (then config.json is looked for beside it).
  static AutoencoderKL load(const std::string& path, Device device = Device::cpu(),
                            VaePrecision precision = VaePrecision::Fp32);
  AutoencoderKL(const AutoencoderKLConfig& config, std::map<std::string, Tensor> state_dict,
                const std::string& source);
  // Names (diffusers' current ones, to_q/to_k/to_v/to_out.0) and shapes of
  // the state dict `config` reads, for programs that build random-weight
  // models (bench/gpu/check_vae_device).
  static std::map<std::string, Shape> state_dict_shapes(const AutoencoderKLConfig& config);

  const AutoencoderKLConfig& config() const { return cfg_; }

  // Moves every weight to `device` (one upload from the host masters; on
  // the CPU the masters themselves). Throws for tf32 or bf16 precision on
  // the CPU.
  void to(Device device);
  // Throws std::invalid_argument naming vae.precision for tf32 or bf16 on
  // the CPU; the setting holds for every later encode/decode (re-derived
  // from the F32 masters, so switching back and forth rounds nothing twice),
  // whose fp32 GEMMs run with TF32 exactly when it is tf32 (the process-wide
  // matmul setting, kernels/matmul.h, is set for the call and restored
  // after it); bf16's GEMMs take bf16 operands with fp32 accumulation.
  void set_precision(VaePrecision precision);
  Device device() const { return device_; }
  VaePrecision precision() const { return precision_; }

  // Posterior of images [N, in_channels, H, W] F32 in [-1, 1] (any strides, any device;
  // the results F32 at every precision):
  // mean and logvar [N, latent_channels, ceil(H / f), ceil(W / f)],
  // f = config().downsample_factor(); logvar clamped to [-30, 20]. Unscaled
  // (multiply a sample by scaling_factor for DiT).
  struct Posterior {
    Tensor mean, logvar;
  };
  Posterior encode(const Tensor& images) const;
  // Images [N, out_channels, f h, f w] (nominally [-1, 1], not clamped) from
  // unscaled latents z [N, latent_channels, h, w] F32 (any strides, any device).
  Tensor decode(const Tensor& z) const;

 private:
  // Loads every layer from `w` (the constructor's body; state_dict_shapes
  // runs it against a recorder).
  void build(VaeWeights& w);
  explicit AutoencoderKL(const AutoencoderKLConfig& config);  // no layers loaded (state_dict_shapes)
  AutoencoderKLConfig cfg_;
  Device device_ = Device::cpu();
  VaePrecision precision_ = VaePrecision::Fp32;
  // Every layer's forward parameters derived from the host masters onto
  // device_ in precision_ (vae_blocks.h), the convolutions' tf32 flag too.
  void place();
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
