// Softmax cross-entropy over logits [B, K], fused forward + backward, as
// torch.nn.CrossEntropyLoss (reduction="mean") and timm's
// LabelSmoothingCrossEntropy / SoftTargetCrossEntropy:
//   hard labels, smoothing s:  loss_b = (1 - s) (-log p_b[y_b]) + s * mean_c(-log p_b[c])
//   soft targets t [B, K]:     loss_b = sum_c -t_bc log p_b[c]
//   loss = mean_b loss_b;  p = softmax(logits) with the row max subtracted.
// dlogits (when defined) receives grad_scale * d loss / d logits:
//   hard: grad_scale * (p - q) / B,  q = (1 - s) onehot(y) + s / K
//   soft: grad_scale * (p * sum_c t_c - t) / B  (= p - t when rows of t sum to 1)
// dlogits may alias logits (computed row by row after the row's loss).
//
// CPU: OpenMP over rows; the loss is summed in double. CUDA:
// kernels/cuda/cross_entropy.h, one block per row, row losses in double and
// summed on the device in a fixed order (equal to the CPU's up to summation
// order). All tensors on one device. Labels out of [0, K) are an error
// naming them, except CUDA labels given to the *_to_stats ops (checking
// them would wait for the GPU): there they make the loss NaN.
// Errors: std::invalid_argument naming the op and the tensor (shape, dtype,
// label out of [0, K), smoothing outside [0, 1]).
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vt {

struct CrossEntropyResult {
  double loss = 0.0;    // mean over the batch
  int64_t correct = 0;  // rows whose argmax(logits) equals the label (hard) or argmax(target) (soft)
};

// logits F32 [B, K]; labels I32 [B]; dlogits F32 [B, K] or undefined;
// pred I32 [B] or undefined: receives argmax(logits) per row (first maximum).
CrossEntropyResult cross_entropy_forward_backward(const Tensor& logits, const Tensor& labels,
                                                  float label_smoothing, const Tensor& dlogits,
                                                  float grad_scale = 1.0f, const Tensor& pred = Tensor());

// targets F32 [B, K] (Mixup/CutMix soft labels; rows normally sum to 1).
CrossEntropyResult soft_cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets,
                                                       const Tensor& dlogits, float grad_scale = 1.0f,
                                                       const Tensor& pred = Tensor());

// The same two ops with the result written to stats (F32 [2] on the logits'
// device: mean loss, number correct) instead of returned, so on CUDA the
// host does not wait for the GPU; the training step reads stats when it logs.
void cross_entropy_to_stats(const Tensor& logits, const Tensor& labels, float label_smoothing, const Tensor& dlogits,
                            const Tensor& stats, float grad_scale = 1.0f, const Tensor& pred = Tensor());
void soft_cross_entropy_to_stats(const Tensor& logits, const Tensor& targets, const Tensor& dlogits,
                                 const Tensor& stats, float grad_scale = 1.0f, const Tensor& pred = Tensor());

}  // namespace vt
