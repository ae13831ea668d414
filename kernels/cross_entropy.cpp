#include "kernels/cross_entropy.h"

#include <string>

#include "kernels/cpu/cross_entropy.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/cross_entropy.h"
#endif

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

// The checks of the hard-label op. Labels are validated on the host, so a bad
// label is an error naming it; CUDA labels only when the caller waits anyway
// (sync), otherwise a bad label makes the device loss NaN.
void check_hard(const char* op, const Tensor& logits, const Tensor& labels, float label_smoothing,
                const Tensor& dlogits, const Tensor& pred, const Tensor& stats, bool sync) {
  check_common(op, logits, dlogits, pred);
  const int64_t b = logits.size(0), k = logits.size(1);
  opcheck::shape(op, "labels", labels, {b});
  opcheck::dtype(op, "labels", labels, DType::I32);
  opcheck::contiguous(op, "labels", labels);
  if (stats.defined()) opcheck::f32_like(op, "stats", stats, {2});
  if (!(label_smoothing >= 0.0f && label_smoothing <= 1.0f))
    opcheck::fail(op, "label_smoothing must be in [0, 1], got " + std::to_string(label_smoothing));
  opcheck::same_device(op, logits.device(),
                       {{"labels", &labels}, {"dlogits", &dlogits}, {"pred", &pred}, {"stats", &stats}});
  if (!labels.device().is_cpu() && !sync) return;
  const Tensor host = labels.device().is_cpu() ? labels : labels.to(Device::cpu());
  const int32_t* y = host.i32();
  for (int64_t r = 0; r < b; ++r)
    if (y[r] < 0 || y[r] >= k)
      opcheck::fail(op, "labels[" + std::to_string(r) + "] = " + std::to_string(y[r]) + " outside [0, " +
                            std::to_string(k) + ") for " + opcheck::desc("logits", logits));
}

void check_soft(const char* op, const Tensor& logits, const Tensor& targets, const Tensor& dlogits,
                const Tensor& pred, const Tensor& stats) {
  check_common(op, logits, dlogits, pred);
  opcheck::f32_like(op, "targets", targets, logits.shape());
  if (stats.defined()) opcheck::f32_like(op, "stats", stats, {2});
  opcheck::same_device(op, logits.device(),
                       {{"targets", &targets}, {"dlogits", &dlogits}, {"pred", &pred}, {"stats", &stats}});
}

// Runs the CPU or CUDA kernel. CUDA: the stats land in device memory
// (`stats` F32 [2] when given); with `sync` they are also copied back and
// returned.
CrossEntropyResult run(const char* op, const Tensor& logits, const Tensor& labels, const Tensor& targets,
                       float smoothing, const Tensor& dlogits, float grad_scale, const Tensor& pred,
                       const Tensor& stats, bool sync) {
  const int64_t b = logits.size(0), k = logits.size(1);
  float* dl = dlogits.defined() ? dlogits.f32() : nullptr;
  int32_t* pr = pred.defined() ? pred.i32() : nullptr;
  CrossEntropyResult res;
  if (!logits.device().is_cpu()) {
#ifdef VT_CUDA
    // Two doubles (mean loss, correct) in a 4-float device buffer.
    Tensor d_stats = Tensor::empty({4}, DType::F32, logits.device());
    cuda::cross_entropy(logits.f32(), labels.defined() ? labels.i32() : nullptr,
                        targets.defined() ? targets.f32() : nullptr, b, k, smoothing, grad_scale, dl, pr,
                        static_cast<double*>(d_stats.raw()), stats.defined() ? stats.f32() : nullptr);
    if (sync) {
      const Tensor h = d_stats.to(Device::cpu());
      const double* v = static_cast<const double*>(h.raw());
      res.loss = v[0];
      res.correct = static_cast<int64_t>(v[1]);
    }
    return res;
#else
    opcheck::no_cuda(op);
#endif
  }
  if (labels.defined())
    res.loss = cpu::cross_entropy_hard(logits.f32(), labels.i32(), b, k, smoothing, grad_scale, dl, pr, &res.correct);
  else
    res.loss = cpu::cross_entropy_soft(logits.f32(), targets.f32(), b, k, grad_scale, dl, pr, &res.correct);
  if (stats.defined()) {
    stats.f32()[0] = static_cast<float>(res.loss);
    stats.f32()[1] = static_cast<float>(res.correct);
  }
  return res;
}

}  // namespace

CrossEntropyResult cross_entropy_forward_backward(const Tensor& logits, const Tensor& labels,
                                                  float label_smoothing, const Tensor& dlogits, float grad_scale,
                                                  const Tensor& pred) {
  const char* op = "cross_entropy_forward_backward";
  check_hard(op, logits, labels, label_smoothing, dlogits, pred, Tensor(), true);
  return run(op, logits, labels, Tensor(), label_smoothing, dlogits, grad_scale, pred, Tensor(), true);
}

CrossEntropyResult soft_cross_entropy_forward_backward(const Tensor& logits, const Tensor& targets,
                                                       const Tensor& dlogits, float grad_scale, const Tensor& pred) {
  const char* op = "soft_cross_entropy_forward_backward";
  check_soft(op, logits, targets, dlogits, pred, Tensor());
  return run(op, logits, Tensor(), targets, 0.0f, dlogits, grad_scale, pred, Tensor(), true);
}

void cross_entropy_to_stats(const Tensor& logits, const Tensor& labels, float label_smoothing, const Tensor& dlogits,
                            const Tensor& stats, float grad_scale, const Tensor& pred) {
  const char* op = "cross_entropy_to_stats";
  opcheck::defined(op, "stats", stats);
  check_hard(op, logits, labels, label_smoothing, dlogits, pred, stats, false);
  run(op, logits, labels, Tensor(), label_smoothing, dlogits, grad_scale, pred, stats, false);
}

void soft_cross_entropy_to_stats(const Tensor& logits, const Tensor& targets, const Tensor& dlogits,
                                 const Tensor& stats, float grad_scale, const Tensor& pred) {
  const char* op = "soft_cross_entropy_to_stats";
  opcheck::defined(op, "stats", stats);
  check_soft(op, logits, targets, dlogits, pred, stats);
  run(op, logits, Tensor(), targets, 0.0f, dlogits, grad_scale, pred, stats, false);
}

}  // namespace vt
