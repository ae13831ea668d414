// The VAE side of dittrain (diffusion/dittrain_main.cpp):
//   dittrain extract CONFIG images=DIR out=DIR [vae=PATH] [store=posterior|sample]
//            [hflip=true|false] [shard_size=N] [batch=N] [key.path=value ...]
// encodes an ImageFolder into latent shards (diffusion/latent_extract.h) at
// the crop model.input_size * 8 with the config's seed and data.on_corrupt;
// and `dittrain sample` of a latent model with vae=PATH (or the config's
// vae.path) decodes its samples (diffusion/vae_decode_samples.h,
// diffusion/dit_sample_files.h).
// Both load the VAE on the config's `device` with `vae.precision` (auto: tf32
// on CUDA, as DiT's sample.py, fp32 on the CPU), so extraction and decoding
// run on the GPU when dittrain does (`device=cuda` on the command line).
// Argument errors are ConfigError naming the argument and its value.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>

#include "diffusion/dit_train_config.h"
#include "vae/autoencoder_kl.h"

namespace vt {

// images out vae store hflip shard_size batch
const std::set<std::string>& dit_extract_arg_keys();

// AutoencoderKL::load(path) on cfg.compute.device in cfg.vae_precision, logged.
AutoencoderKL load_dit_vae(const DitTrainConfig& cfg, const std::string& path);

// The VAE to use: vae=PATH if given, else the config's vae.path ("" if neither).
std::string dit_vae_path(const DitTrainConfig& cfg, const std::map<std::string, std::string>& opts);

// `dittrain extract`. Throws ConfigError for bad arguments (and a missing
// VAE), std::runtime_error for data and VAE errors.
void run_dit_extract(const DitTrainConfig& cfg, const std::map<std::string, std::string>& opts);

// Before `dittrain sample` draws anything: the VAE that will decode a latent
// model's samples, loaded and checked (latent_channels against
// model.in_channels; a scaling_factor other than data.latent_scale is a
// warning), or nullopt when none is given. vae= for a pixel-space model is a
// ConfigError naming vae (an error, not a warning: the user expects decoded
// images and would silently get none of what they asked for). A missing or
// bad VAE throws here, so no samples are drawn in vain. A latent model
// without a VAE is said on the log (its npz will hold latents, not images).
// The samples are decoded chunk by chunk (diffusion/dit_sample_files.h).
std::optional<AutoencoderKL> dit_sample_vae(const DitTrainConfig& cfg, const std::map<std::string, std::string>& opts);

}  // namespace vt
