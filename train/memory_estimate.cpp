#include "train/memory_estimate.h"

#include <cstdio>
#include <stdexcept>

#include "core/allocator.h"

namespace vt {

int64_t saved_activation_lower_bound(const BackboneConfig& cfg, int64_t B, int64_t T, bool bf16_activations,
                                     ActivationCheckpointing ckpt) {
  if (B < 1 || T < 1)
    throw std::invalid_argument("saved_activation_lower_bound: B = " + std::to_string(B) + ", T = " +
                                std::to_string(T) + " (both must be >= 1)");
  const int64_t R = B * T, D = cfg.dim, L = cfg.depth, H = cfg.heads, e = bf16_activations ? 2 : 4;
  const bool siamese = cfg.scheme == NormScheme::Siamese;
  const int64_t norms = siamese ? 2 : 1, streams = siamese ? 2 : 1;
  int64_t block = 2 * e * R * D                // z of both sublayers
                  + 2 * norms * 4 * 3 * R      // LayerNorm statistics
                  + 3 * e * R * D + e * R * D  // qkv, attention output
                  + 4 * B * H * T              // logsumexp
                  + 2 * e * R * cfg.hidden();  // the MLP's two hidden tensors
  if (cfg.conditioned()) {
    block += 2 * e * R * D + 4 * B * 6 * D;  // f of both sublayers, adaLN output
    if (bf16_activations) block += 2 * B * D;  // the adaLN Linear's bf16 input copy
  }
  int64_t drop_blocks = 0;
  for (float p : cfg.drop_path) drop_blocks += p > 0.0f;
  const int64_t slot = 4 * R * D * streams;
  // Outside the blocks: SiameseNorm's final merge statistics, DiT's
  // conditioning c and SiLU(c).
  const int64_t top = (siamese ? 24 * R : 0) + (cfg.conditioned() ? 2 * 4 * B * D : 0);
  if (ckpt == ActivationCheckpointing::Blocks)
    return block + (drop_blocks > 0 ? 2 * 4 * B : 0) + (L + 2) * slot + top;
  return L * block + drop_blocks * 2 * 4 * B + (2 * L + 1) * slot + top;
}

StepMemoryEstimate estimate_step_memory(const StepMemoryInputs& in) {
  StepMemoryEstimate e;
  e.state_bytes = in.params * (4 + 4 + 8 + (in.ema ? 4 : 0) + (in.bf16 ? 2 : 0));
  e.activation_bytes = saved_activation_lower_bound(in.backbone, in.batch, in.tokens, in.bf16, in.ckpt);
  return e;
}

namespace {
std::string gib(int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return s;
}
}  // namespace

void check_step_memory(const StepMemoryEstimate& e, const StepMemoryInputs& in, size_t free_bytes,
                       const std::string& device) {
  if (e.total() <= static_cast<int64_t>(free_bytes)) return;
  std::string lower = "train.batch_size (" + std::to_string(in.batch) + " per process)";
  if (in.ckpt == ActivationCheckpointing::None) lower += ", train.activation_checkpointing=blocks";
  if (!in.bf16) lower += ", precision=bf16";
  throw std::runtime_error(
      "GPU memory: a training step needs at least " + gib(e.total()) + " (" + std::to_string(e.total()) +
      " bytes: parameters, gradients and optimizer state " + gib(e.state_bytes) + " for " +
      std::to_string(in.params) + " parameters, saved activations " + gib(e.activation_bytes) + " at " +
      std::to_string(in.batch) + " x " + std::to_string(in.tokens) + " tokens, activation checkpointing " +
      activation_checkpointing_name(in.ckpt) + ", " + (in.bf16 ? "bf16" : "fp32") + " activations; workspaces " +
      "come on top) but " + device + " has " + gib(static_cast<int64_t>(free_bytes)) + " (" +
      std::to_string(free_bytes) + " bytes) free; lower it with " + lower);
}

void check_gpu_memory_before_step(const StepMemoryInputs& in, int device_index) {
  check_step_memory(estimate_step_memory(in), in, cuda_free_bytes(device_index),
                    "cuda:" + std::to_string(device_index));
}

}  // namespace vt
