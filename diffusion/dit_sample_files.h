// `dittrain sample` (diffusion/dittrain_main.cpp): draws num_samples images
// from a checkpoint into <out>.npz and <out>.png as DiT's sample_ddp.py
// (ADM sample batch: `arr_0` uint8 [N, H, W, 3] and `labels` int64 [N]),
// in chunks that survive a killed run.
//
// Output: pixel-space models and latent models with a VAE (decoded as DiT's
// sample.py, diffusion/vae_decode_samples.h) write `arr_0`; latent models
// without a VAE write `latents` F32 [N, C, H, W] divided by
// data.latent_scale instead. Labels are uniform in [0, model.num_classes)
// from Philox(seed, labels). <out>.png is a grid of the first (up to) 64.
//
// Chunks: samples are drawn `chunk` at a time (a multiple of the batch);
// each finished chunk (its rows of the output arrays and of `labels`) is
// written atomically to <out>.partial/chunk_<k>.npz, with a manifest of what
// determines the samples (diffusion/sample_partial.h). A rerun with the
// same arguments continues at the first missing chunk ("resuming: K of N
// samples already done"); other arguments (seed, steps, weights, VAE, ...)
// are refused naming the key and the directory. Once every chunk is there
// the final npz is assembled without holding the array: the rows stream,
// chunk by chunk, into <out>.partial/assembly.npz.part (core/npz_stream_writer.h),
// each chunk file removed once its rows are synced, so every row is always
// in a chunk or in that file; a rerun after a kill continues the assembly.
// The finished file is renamed over <out>.npz and <out>.partial removed.
//
// A finished output (core/output_claim.h) records the same keys in
// <out>.npz.manifest.json. A rerun with the same arguments says it is done
// and draws nothing (exit 0); other arguments, or an <out>.npz that records
// nothing, are refused naming the key, both values and the file, unless
// overwrite=true (which also starts a .partial of other arguments over).
// One sampler per out= at a time: a second is refused at once, naming the
// first (a lock on <dir>/.<name>.npz.lock). Sample i's noise depends only on (seed, i) (diffusion/sampler.h)
// and npz bytes carry no time stamp (core/npz.h), so the final <out>.npz is
// byte-identical whether the run was interrupted or not.
//
// Stop signals (run.stop_signals, core/stop_request.h, docs/cluster.md):
// installed once the model and the partial state are loaded; a request is
// acted on after the batch in flight: the chunk in progress is abandoned
// (its finished batches are drawn again by the rerun) unless that batch was
// its last one, in which case the chunk is written first; then
// StopRequested is thrown (exit status 3, kExitStopped). Once the last chunk
// is written a request is ignored: only the assembly of the final npz (files
// read and written) is left.
//
// Test hook: VT_TEST_SAMPLE_KILL_AFTER_CHUNKS=K[:SIGNAL] sends SIGNAL
// (default SIGKILL; names as run.stop_signals) to the process itself right
// after it has written its K-th chunk file (and, for a stop signal, waits
// until it is recorded), to simulate a kill or a preemption at a known point.
#pragma once
#include <cstdint>
#include <string>

#include "diffusion/dit_train_config.h"
#include "diffusion/sampler.h"
#include "vae/autoencoder_kl.h"

namespace vt {

// Upper bound of num_samples (ADM's FID-50K needs 5e4).
constexpr int64_t kMaxSamples = 1000000;

// Creates the parent directory of `out` (as the sampler would at the end) and
// checks that <out>.npz and <out>.png can be written there: a typo in out=
// must fail before hours of sampling, not after. Throws std::runtime_error
// naming out= and the culprit (a parent that is a file or not writable, an
// output name that is a directory).
void check_sample_output(const std::string& out);

// Samples per chunk when none is asked for: the largest multiple of `batch`
// up to 1024 (at least one batch).
int64_t default_sample_chunk(int64_t batch);

struct SampleRequest {
  std::string ckpt;          // checkpoint directory
  std::string out;           // output path without .npz / .png
  int64_t num_samples = 64;  // [1, kMaxSamples]
  SampleOptions options;     // sampler, steps, cfg_scale, seed, batch, ...
  bool use_ema = true;       // EMA weights (ema.safetensors) or the model's
  int64_t chunk = 0;         // samples per chunk file; 0: default_sample_chunk(options.batch)
  const AutoencoderKL* vae = nullptr;  // latent models: decode with it (nullptr: write latents)
  std::string vae_source;              // its path (fingerprinted into the manifest)
  bool overwrite = false;              // replace a finished <out>.npz (or a .partial) of other arguments
};

// Throws std::invalid_argument for num_samples outside [1, kMaxSamples],
// batch < 1, or a chunk that is not a positive multiple of the batch;
// std::runtime_error for an output that cannot be written (before any
// sampling), a bad checkpoint, partial state of other arguments or a damaged
// chunk file (naming the file: delete it and rerun to draw its samples again);
// StopRequested after a stop signal (see above).
void dit_sample_to_files(const DitTrainConfig& cfg, const SampleRequest& req);

// The same without a VAE and with the default chunk.
void dit_sample_to_files(const DitTrainConfig& cfg, const std::string& ckpt, int64_t num_samples,
                         const SampleOptions& opt, const std::string& out, bool use_ema = true);

}  // namespace vt
