// `dittrain extract`: an ImageFolder -> VAE posteriors as latent shards that
// data.kind: latents training reads (data_pipeline/dataset.h,
// LatentShardDataset), following DiT's train.py (and fast-DiT's
// extract_features.py for pre-drawn samples):
//   image -> ADM center crop to S = model.input_size * f (f the VAE's 8x)
//         -> [-1, 1] -> AutoencoderKL.encode -> posterior (mean, logvar).
// With store_posterior (default) a shard holds `posterior` F32
// [n, 2C, S/f, S/f] (mean channels, then logvar) and training draws a fresh
// latent from it at every step; otherwise `latents` F32 [n, C, S/f, S/f], one
// sample drawn here with eps from Philox(seed, (purpose, image index, copy)).
// `labels` I64 [n] are the ImageFolder class indices. With hflip_copies each
// image is stored twice, as is and mirrored (adjacent rows).
//
// Shards: <out>/shard_<k>.safetensors (5 digits) for images
// [k * shard_size, (k+1) * shard_size) of the folder's sorted listing, each
// written atomically; an existing shard is complete and is skipped, so a
// killed extraction continues where it stopped. The metadata records the
// VAE (its path, and `vae_sha256`: SHA-256 of config.json and the weights
// file), the image list (`images_root`, `images_count`, `images_sha256`: of
// the relative file names and labels in order), the crop size and the
// options; a rerun into the same folder with other options, another VAE's
// weights or other images is an error naming out=, the shard and the key.
//
// `vae_precision` (fp32 | tf32 | bf16) is recorded too: a folder holds latents of
// one arithmetic (shards written before the key existed count as fp32).
//
// Device: the VAE encodes where it lives (vae.device(), vae.precision():
// dittrain's `device` key and `vae.precision`); on a GPU each batch is
// decoded and cropped on the host into page-locked memory, uploaded, and the
// posteriors come back to the host for the shard. A batch the GPU has no
// memory for is an OutOfMemory naming batch=.
//
// Bad images (undecodable) are errors naming the file with on_corrupt
// "error", and are skipped with a warning with "skip" (the shard then holds
// fewer rows). Images smaller than S are upsampled, as DiT's center_crop_arr.
#pragma once
#include <cstdint>
#include <string>

#include "vae/autoencoder_kl.h"

namespace vt {

struct ExtractOptions {
  std::string images_dir, out_dir;
  std::string vae_source;      // recorded in the shard metadata
  int64_t image_size = 256;    // ADM crop S; a multiple of the VAE's downsampling
  bool store_posterior = true;
  bool hflip_copies = false;
  int64_t shard_size = 1024;   // images per shard
  int64_t batch = 8;           // images per VAE call
  std::string on_corrupt = "error";  // error | skip
  uint64_t seed = 0;           // pre-drawn samples only
  int64_t num_classes = 0;     // model.num_classes; more class folders is an error (0: unchecked)
};

struct ExtractReport {
  int64_t shards_written = 0, shards_skipped = 0, bad_images = 0;
  int64_t rows = 0;           // written by this run
  int64_t rows_existing = 0;  // in the shards already there
  int64_t total_rows() const { return rows + rows_existing; }
};

// Throws std::runtime_error naming the folder, shard or image; std::invalid_argument for bad options.
ExtractReport extract_latents(const AutoencoderKL& vae, const ExtractOptions& opt);

}  // namespace vt
