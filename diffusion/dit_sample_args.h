// The key=value arguments of `dittrain sample` (diffusion/dittrain_main.cpp),
// checked and combined with the config's sample.* defaults.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "diffusion/dit_train_config.h"
#include "diffusion/sampler.h"

namespace vt {

struct DitSampleArgs {
  std::string ckpt;          // checkpoint directory (as given: relative to the CWD; a run directory: its newest step_<N>/)
  std::string out;           // output path without .npz / .png
  int64_t num_samples = 64;  // [1, kMaxSamples]
  SampleOptions options;     // the config's sample.* keys, overridden by the arguments
  bool use_ema = true;       // weights=ema (default) | model
  int64_t chunk = 0;         // samples per resumable chunk (0: default_sample_chunk, diffusion/dit_sample_files.h)
  bool overwrite = false;    // overwrite=true: replace an output of other arguments
};

// ckpt num_samples steps cfg_scale seed sampler eta batch weights out chunk overwrite
const std::set<std::string>& dit_sample_arg_keys();

// `opts` maps argument keys to their text. Defaults: sampler, steps, eta,
// cfg_scale, seed, batch, guided_channels, clip_denoised from cfg.grid (the
// config's sample.* keys); num_samples 64; weights ema; out
// <ckpt>/samples_<N>_<sampler><steps>_cfg<G>_seed<K>. out= is the name
// given: "x" and "x.npz" both write x.npz (and x.png); a directory (an
// existing one, or a name ending in '/') gets the default file name inside
// it. overwrite true | false (default). Throws ConfigError
// naming the key and the value for: a missing ckpt, an unknown key, text that
// is not entirely a number of the key's type, or a value out of range
// (steps in [1, diffusion.num_timesteps], num_samples in [1, kMaxSamples],
// batch in [1, 4096], seed in [0, 2^63 - 1], cfg_scale and eta finite in
// [0, 1000], sampler ddpm | ddim, weights ema | model, out non-empty, chunk
// a multiple of the batch in [batch, kMaxSamples]).
DitSampleArgs parse_dit_sample_args(const std::map<std::string, std::string>& opts, const DitTrainConfig& cfg);

}  // namespace vt
