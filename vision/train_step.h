// The model part of vtrain's training step with the batch on the model's
// device (docs/design.md §2): Mixup/CutMix applied there with the host's
// draw, forward with drop-path, the (soft-target) cross-entropy whose loss
// and correct count stay in device memory, and the backward pass into the
// ParamStore's (zeroed) gradients. The update that ends the step is
// TrainLoop's (train/loop.h: the fused clip/AdamW/bf16-copy/EMA pass).
// vtrain's trainer (vision/trainer.cpp) and its GPU step benchmark
// (bench/bench_train_step.cpp) both run this function, so the benchmark
// times the trainer's step.
//
// Depends on the model and the op library only (no data pipeline), so the
// GPU programs that carry no OpenCV can link it.
#pragma once
#include <cstdint>

#include "core/tensor.h"
#include "data_pipeline/mixup.h"
#include "vision/vit.h"

namespace vt {

// The step's tensors, on the model's device, reused every step.
struct VitStepBuffers {
  Tensor logits, dlogits;  // F32 [B, K]
  Tensor targets;          // F32 [B, K]: the soft targets of a batch mixed here
  Tensor stats;            // F32 [2]: the loss (batch mean) and the correct count, TrainLoop's scalars
  // Planned for B images of K classes on `dev`.
  static VitStepBuffers plan(int64_t B, int64_t K, Device dev);
};

struct VitStepInputs {
  Tensor images;  // F32 [B, C, H, W] on the model's device (mixed in place)
  Tensor labels;  // I32 [B] on the model's device
  // F32 [B, K]: soft targets of a batch already mixed on the host (several
  // ranks mix the global batch there); undefined otherwise.
  Tensor mixed_targets;
  // This step's Mixup/CutMix draw (one rank; applied to images and labels
  // here), or null for plain label-smoothing cross-entropy.
  const MixupDecision* mix = nullptr;
  double label_smoothing = 0.1;  // the targets' smoothing (mixed or not)
  uint64_t seed = 0, step = 0;   // drop-path masks are keyed by (seed, step)
};

// zero_grad, (mix), forward, loss into b.stats, backward. Throws
// std::invalid_argument for an odd batch with a Mixup draw (pairs i, B-1-i).
void vit_device_forward_backward(VisionTransformer& model, const VitStepInputs& in, VitStepBuffers& b);
// The same in two parts (a CUDA Graph step, train/step_graph.h):
// vit_device_mix applies in.mix to in.images and b.targets (nothing without
// a draw; the odd-batch error); vit_device_body is zero_grad, forward, loss,
// backward, whose launches take the same arguments every step.
void vit_device_mix(const VitStepInputs& in, VitStepBuffers& b);
void vit_device_body(VisionTransformer& model, const VitStepInputs& in, VitStepBuffers& b);

}  // namespace vt
