// Sampling from a trained DiT (DiT sample.py / sample_ddp.py semantics,
// docs/recipes.md §8): start from N(0, I), run the respaced reverse process with
// DDPM ancestral steps or DDIM (eta), optionally with classifier-free
// guidance, and return the final x_0.
//
// Randomness is keyed per sample: the initial noise of sample i comes from
// Philox(seed, (init, i)) and the noise of its reverse step k from
// Philox(seed, (step, i, k)), so a sample does not depend on the batch size
// or on which other samples are drawn with it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "diffusion/dit_model.h"
#include "diffusion/gaussian_diffusion.h"

namespace vt {

struct SampleOptions {
  std::string sampler = "ddpm";  // "ddpm" | "ddim"
  int steps = 250;               // respacing count ("ddim" with N steps uses the "ddimN" stride rule when it
                                 // exists, else N evenly spaced steps)
  double eta = 0.0;              // DDIM only
  double cfg_scale = 1.0;        // <= 1: no guidance
  int guided_channels = -1;      // -1: all noise channels; DiT: 3
  bool clip_denoised = false;    // DiT's samplers: false
  uint64_t seed = 0;
  int batch = 16;                // images per model call (doubled under guidance)
  int num_timesteps = 1000;      // T of the training schedule (diffusion.num_timesteps)
};

// The respaced diffusion SampleOptions describe (a linear schedule of
// opt.num_timesteps steps, respaced to opt.steps).
GaussianDiffusion sampling_diffusion(const SampleOptions& opt);

// Draws labels.size() samples, [N, C, H, W] F32 on the CPU (the model's
// input space). The reverse process (noise, model, guidance, DDPM/DDIM
// steps: kernels/diffusion.h) runs on the device of the model's parameters.
// Sample i uses the noise of sample index_base + i, so drawing samples
// [a, b) in one call with index_base = a gives the same images as drawing
// [0, b) and keeping [a, b) (callers split large requests into chunks).
// `progress(done_steps, total_steps)` is called after each reverse step of
// each batch when given. Throws std::invalid_argument for a bad sampler name,
// guidance on a model without a null class, or labels outside [0, num_classes).
Tensor sample_images(DiT& model, const SampleOptions& opt, const std::vector<int32_t>& labels,
                     const std::function<void(int64_t, int64_t)>& progress = {}, int64_t index_base = 0);

}  // namespace vt
