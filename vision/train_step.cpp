#include "vision/train_step.h"

#include <stdexcept>
#include <string>

#include "kernels/cross_entropy.h"
#include "kernels/mixup.h"

namespace vt {

VitStepBuffers VitStepBuffers::plan(int64_t B, int64_t K, Device dev) {
  VitStepBuffers b;
  b.logits = Tensor::empty({B, K}, DType::F32, dev);
  b.dlogits = Tensor::empty({B, K}, DType::F32, dev);
  b.targets = Tensor::empty({B, K}, DType::F32, dev);
  b.stats = Tensor::zeros({2}, DType::F32, dev);
  return b;
}

void vit_device_mix(const VitStepInputs& in, VitStepBuffers& b) {
  if (in.mixed_targets.defined() || !in.mix) return;
  const int64_t B = in.images.size(0);
  if (B % 2 != 0) throw std::invalid_argument("Mixup/CutMix: batch size " + std::to_string(B) + " must be even");
  const MixupDecision& d = *in.mix;
  if (d.applied) mix_images(in.images, d.cutmix, d.lambda, MixBox{d.box.y0, d.box.y1, d.box.x0, d.box.x1});
  mix_targets(in.labels, d.lambda, in.label_smoothing, b.targets);
}

void vit_device_body(VisionTransformer& model, const VitStepInputs& in, VitStepBuffers& b) {
  model.params().zero_grad();
  model.forward(in.images, b.logits, true, in.seed, in.step);
  if (in.mixed_targets.defined()) soft_cross_entropy_to_stats(b.logits, in.mixed_targets, b.dlogits, b.stats);
  else if (in.mix) soft_cross_entropy_to_stats(b.logits, b.targets, b.dlogits, b.stats);
  else cross_entropy_to_stats(b.logits, in.labels, static_cast<float>(in.label_smoothing), b.dlogits, b.stats);
  model.backward(b.dlogits);
}

// (zero_grad after the mix: the two touch different buffers.)
void vit_device_forward_backward(VisionTransformer& model, const VitStepInputs& in, VitStepBuffers& b) {
  vit_device_mix(in, b);
  vit_device_body(model, in, b);
}

}  // namespace vt
