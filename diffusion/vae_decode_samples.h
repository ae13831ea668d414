// Decoding a latent DiT model's samples with the VAE, as DiT's sample.py
// (vae.decode(samples / 0.18215).sample, then clamp(127.5 x + 128, 0, 255)
// as uint8): `dittrain sample` of a latent model with a VAE (vae=PATH or the
// config's vae.path) rewrites <out>.npz, which held `latents` F32
// [N, C, h, w] (already divided by data.latent_scale) and `labels`, as an
// ADM sample batch: `arr_0` U8 [N, f h, f w, 3] and `labels`, so that
// `veval fid --samples <out>.npz` scores it; <out>.png becomes the grid of
// the first (up to 64) decoded images. The file is replaced atomically.
// Errors: std::runtime_error naming the file (no `latents`, a channel count
// other than the VAE's latent_channels).
#pragma once
#include <cstdint>
#include <string>

#include "core/tensor.h"
#include "vae/autoencoder_kl.h"

namespace vt {

// Decodes in batches of `batch` latents; returns the number of images.
int64_t vae_decode_sample_files(const AutoencoderKL& vae, const std::string& out, int64_t batch = 8);

// The conversion itself, as `dittrain sample` applies it to each chunk of
// samples (diffusion/dit_sample_files.h): latents F32 [n, C, h, w] (already
// divided by data.latent_scale) -> U8 [n, f h, f w, 3], `batch` latents per
// VAE call. `what` names the source in the error for a channel count other
// than the VAE's latent_channels (std::runtime_error).
Tensor vae_decode_to_uint8(const AutoencoderKL& vae, const Tensor& latents, int64_t batch, const std::string& what);

}  // namespace vt
