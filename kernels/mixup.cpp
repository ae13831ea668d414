#include "kernels/mixup.h"

#include <string>

#include "kernels/cpu/mixup.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/mixup.h"
#endif

namespace vt {

void mix_images(const Tensor& images, bool cutmix, double lambda, const MixBox& box) {
  const char* op = "mix_images";
  const DType dt = opcheck::io_dtype(op, "images", images);
  opcheck::contiguous(op, "images", images);
  if (images.dim() != 4) opcheck::fail(op, opcheck::desc("images", images) + " must be [B, C, H, W]");
  const int64_t B = images.size(0), C = images.size(1), H = images.size(2), W = images.size(3);
  if (B % 2 != 0) opcheck::fail(op, opcheck::desc("images", images) + ": the batch size must be even");
  if (!(lambda >= 0.0 && lambda <= 1.0)) opcheck::fail(op, "lambda " + std::to_string(lambda) + " outside [0, 1]");
  if (cutmix && !(0 <= box.y0 && box.y0 <= box.y1 && box.y1 <= H && 0 <= box.x0 && box.x0 <= box.x1 && box.x1 <= W))
    opcheck::fail(op, "box [" + std::to_string(box.y0) + ", " + std::to_string(box.y1) + ") x [" +
                          std::to_string(box.x0) + ", " + std::to_string(box.x1) + ") outside the " +
                          std::to_string(H) + " x " + std::to_string(W) + " image");
  const float l = static_cast<float>(lambda), m = static_cast<float>(1.0 - lambda);
  if (!images.device().is_cpu()) {
#ifdef VT_CUDA
    if (cutmix) cuda::cutmix_images(images.raw(), B, C, H, W, box.y0, box.y1, box.x0, box.x1, dt);
    else cuda::mixup_images(images.raw(), B, C * H * W, l, m, dt);
    return;
#else
    opcheck::no_cuda(op);
#endif
  }
  if (cutmix) cpu::cutmix_images(images.f32(), B, C, H, W, box.y0, box.y1, box.x0, box.x1);
  else cpu::mixup_images(images.f32(), B, C * H * W, l, m);
}

void mix_targets(const Tensor& labels, double lambda, double smoothing, const Tensor& targets) {
  const char* op = "mix_targets";
  opcheck::dtype(op, "labels", labels, DType::I32);
  opcheck::contiguous(op, "labels", labels);
  if (labels.dim() != 1) opcheck::fail(op, opcheck::desc("labels", labels) + " must be [B]");
  opcheck::dtype(op, "targets", targets, DType::F32);
  opcheck::contiguous(op, "targets", targets);
  if (targets.dim() != 2 || targets.size(0) != labels.size(0) || targets.size(1) < 1)
    opcheck::fail(op, opcheck::desc("targets", targets) + " must be [B, K] for " + opcheck::desc("labels", labels));
  if (!(lambda >= 0.0 && lambda <= 1.0)) opcheck::fail(op, "lambda " + std::to_string(lambda) + " outside [0, 1]");
  if (!(smoothing >= 0.0 && smoothing <= 1.0))
    opcheck::fail(op, "smoothing " + std::to_string(smoothing) + " outside [0, 1]");
  opcheck::same_device(op, labels.device(), {{"targets", &targets}});
  const int64_t B = labels.size(0), K = targets.size(1);
  if (!labels.device().is_cpu()) {
#ifdef VT_CUDA
    return cuda::mix_targets(labels.i32(), B, K, lambda, smoothing, targets.f32());
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::mix_targets(labels.i32(), B, K, lambda, smoothing, targets.f32());
}

}  // namespace vt
