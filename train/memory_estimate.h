// GPU memory a training step needs, estimated before step 1 from the
// configuration, and the check both trainers (vtrain, dittrain) make with it
// before the model's first GPU allocation.
//
// The estimate is a LOWER BOUND of the step's peak, in bytes:
//   state        parameters x (4 weights + 4 gradients + 8 AdamW moments
//                + 4 with an EMA + 2 with precision bf16's weight copy)
//   activations  the backbone's saved activations, the closed form of
//                docs/design.md §3 (saved_activation_lower_bound below)
// It leaves out what it cannot bound from below without the kernels' choices:
// the workspaces (cuBLASLt's, up to 32 MiB a GEMM; attention's), the
// patch/label embeddings and the head's activations, the batch, transient
// gradients and the allocator's rounding. Every counted term is held at once
// at the step's peak, so a configuration whose estimate exceeds the free
// memory cannot fit: the check never refuses a configuration that fits (one
// that passes may still run out later; the allocator's error then names the
// size asked).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "backbone/backbone.h"

namespace vt {

// Saved activation bytes of `cfg`'s backbone for B rows of T tokens on a GPU
// (logsumexp, not the CPU's probabilities), with bf16 activations when
// bf16_activations (precision bf16), under checkpointing `ckpt`. Per block
// (R = B T, e = 2 bf16 / 4 fp32): z of both sublayers 2eRD, the LayerNorm
// statistics 4·3R per norm (two norms a sublayer for SiameseNorm, else one
// counted), qkv 3eRD, the attention output eRD, logsumexp 4·B·heads·T, the
// MLP's two hidden tensors 2eR·hidden, drop-path scales 4B per sublayer of a
// block with a non-zero rate, and for DiT f of both sublayers 2eRD and the
// adaLN output 4B·6D (and in bf16 the adaLN Linear's bf16 input copy 2BD).
// Stream slots 4RD, two streams for SiameseNorm (one counted for the other
// schemes). `none` keeps L blocks and 2L + 1 slots per stream, `blocks` one
// block (the union: drop-path scales when any block has them) and L + 2
// slots. Outside the blocks: SiameseNorm's final merge statistics 24R, DiT's
// conditioning c and SiLU(c) 2·4BD. Exact for SiameseNorm (the emulator test
// checks it against Backbone::saved_activation_bytes()); below the true value
// for the other schemes (their extra norms and streams are not counted).
// Throws std::invalid_argument for B, T < 1.
int64_t saved_activation_lower_bound(const BackboneConfig& cfg, int64_t B, int64_t T, bool bf16_activations,
                                     ActivationCheckpointing ckpt);

struct StepMemoryEstimate {
  int64_t state_bytes = 0;        // parameters, gradients, moments, EMA, bf16 copy
  int64_t activation_bytes = 0;   // saved activations (per process)
  int64_t total() const { return state_bytes + activation_bytes; }
};

struct StepMemoryInputs {
  BackboneConfig backbone;
  int64_t params = 0;          // all parameters of the model (ParamStore::numel)
  int64_t batch = 0;           // this process's rows per step
  int64_t tokens = 0;          // tokens per row entering the backbone
  bool bf16 = false;           // precision bf16 (weight copy, bf16 activations)
  bool ema = false;
  ActivationCheckpointing ckpt = ActivationCheckpointing::None;
};
StepMemoryEstimate estimate_step_memory(const StepMemoryInputs& in);

// Throws std::runtime_error when e.total() > free_bytes, naming the
// estimate and its terms (GiB), the free memory, the device, the per-process
// batch and the keys that lower the need: `train.batch_size`, and
// `train.activation_checkpointing=blocks` when it is none, `precision=bf16`
// when not bf16.
void check_step_memory(const StepMemoryEstimate& e, const StepMemoryInputs& in, size_t free_bytes,
                       const std::string& device);

// Both trainers, before the model's first GPU allocation: the free memory of
// CUDA device `device_index` (cudaMemGetInfo) against the estimate; throws as
// check_step_memory.
void check_gpu_memory_before_step(const StepMemoryInputs& in, int device_index);

}  // namespace vt
