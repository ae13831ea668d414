#include "kernels/image_prep.h"

#include <string>

#include "kernels/cpu/image_prep.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/image_prep.h"
#endif

namespace vt {

void normalize_u8_hwc(const Tensor& u8, const std::vector<float>& mean, const std::vector<float>& std,
                      const Tensor& out) {
  const char* op = "normalize_u8_hwc";
  opcheck::dtype(op, "u8", u8, DType::U8);
  opcheck::contiguous(op, "u8", u8);
  if (u8.dim() != 4) opcheck::fail(op, opcheck::desc("u8", u8) + " must be [B, H, W, C]");
  const int64_t B = u8.size(0), H = u8.size(1), W = u8.size(2), C = u8.size(3);
  if (static_cast<int64_t>(mean.size()) != C || static_cast<int64_t>(std.size()) != C)
    opcheck::fail(op, "mean and std need " + std::to_string(C) + " entries (one per channel of " +
                          opcheck::desc("u8", u8) + "), got " + std::to_string(mean.size()) + " and " +
                          std::to_string(std.size()));
  const DType dt = opcheck::io_dtype(op, "out", out);
  opcheck::like(op, "out", out, {B, C, H, W}, dt);
  opcheck::same_device(op, u8.device(), {{"out", &out}});
  // The loader's constants (data_pipeline to_chw_normalized), formed once in fp32.
  std::vector<float> a(static_cast<size_t>(C)), b(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) {
    if (!(std[c] > 0.0f)) opcheck::fail(op, "std[" + std::to_string(c) + "] = " + std::to_string(std[c]) + " must be > 0");
    a[c] = 1.0f / (255.0f * std[c]);
    b[c] = -mean[c] / std[c];
  }
  if (!u8.device().is_cpu()) {
#ifdef VT_CUDA
    return cuda::normalize_u8_hwc(u8.u8(), a.data(), b.data(), out.raw(), B, H, W, C, dt);
#else
    opcheck::no_cuda(op);
#endif
  }
  cpu::normalize_u8_hwc(u8.u8(), a.data(), b.data(), out.f32(), B, H, W, C);
}

}  // namespace vt
