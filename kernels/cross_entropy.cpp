#include "kernels/cross_entropy.h"

#include <string>

#include "kernels/cpu/cross_entropy.h"
#include "kernels/op_checks.h"

namespace vt {

namespace {

void check_common(const char* op, const Tensor& logits, const Tensor& dlogits, const Tensor& pred) {
  opcheck::dtype(op, "logits", logits, DType::F32);
  opcheck::contiguous(op, "logits", logits);
  if (logits.dim() != 2 || logits.size(1) < 1)
    opcheck::fail(op, opcheck::desc("logits", logits) + " must be [B, K] with K >= 1");
  if (dlogits.defined()) opcheck::f32_like(op, "dlogits", dlogits, logits.shape());
  if (pred.defined()) {
    opcheck::shape(op, "pred", pred, {logits.size(0)});
    opcheck::dtype(op, "pred", pred, DType::I32);
    opcheck::contiguous(op, "pred", pred);
  }
}

}  // namespace

CrossEntropyResult cross_entropy_forward_backward(const Tensor& logits, const Tensor& labels,
                                                  float label_smoothing, const Tensor& dlogits, float grad_scale,
                                                  const Tensor& pred) {
  const char* op = "cross_entropy_forward_backward";
  check_common(op, logits, dlogits, pred);
  const int64_t b = logits.size(0), k = logits.size(1);
  opcheck::shape(op, "labels", labels, {b});
  opcheck::dtype(op, "labels", labels, DType::I32);
  opcheck::contiguous(op, "labels", labels);
  if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
    opcheck::fail(op, "label_smoothing must be in [0, 1], got " + std::to_string(label_smoothing));
  opcheck::same_device(op, logits.device(), {{"labels", &labels}, {"dlogits", &dlogits}, {"pred", &pred}});
  if (!logits.device().is_cpu()) opcheck::no_cuda(op);
  const int32_t* y = labels.i32();
  for (int64_t r = 0; r < b; ++r)
    if (y[r] < 0 || y[r] >= k)
      opcheck::fail(op, "labels[" + std::to_string(r) + "] = " + std::to_string(y[r]) + " outside [0, " +
                            std::to_string(k) + ") for " + opcheck::desc("logits", logits));
  CrossEntropyResult res;
  res.loss = cpu::cross_entropy_hard(logits.f32(), y, b, k, label_smoothing, grad_scale,
                                     dlogits.defined() ? dlogits.f32() : nullptr,
                                     pred.defined() ? pred.i32() : nullptr, &res.correct);
  return res;
}

CrossEntropyResult soft_cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets,
                                                       const Tensor& dlogits, float grad_scale, const Tensor& pred) {
  const char* op = "soft_cross_entropy_forward_backward";
  check_common(op, logits, dlogits, pred);
  opcheck::f32_like(op, "targets", targets, logits.shape());
  opcheck::same_device(op, logits.device(), {{"targets", &targets}, {"dlogits", &dlogits}, {"pred", &pred}});
  if (!logits.device().is_cpu()) opcheck::no_cuda(op);
  CrossEntropyResult res;
  res.loss = cpu::cross_entropy_soft(logits.f32(), targets.f32(), logits.size(0), logits.size(1), grad_scale,
                                     dlogits.defined() ? dlogits.f32() : nullptr,
                                     pred.defined() ? pred.i32() : nullptr, &res.correct);
  return res;
}

}  // namespace vt
