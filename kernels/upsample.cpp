#include "kernels/upsample.h"

#include "kernels/cpu/upsample.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/upsample.h"
#endif

namespace vt {

void upsample_nearest2x(const Tensor& x, const Tensor& y) {
  const char* op = "upsample_nearest2x";
  const DType io = opcheck::io_dtype(op, "x", x);
  opcheck::contiguous(op, "x", x);
  if (x.dim() != 4) opcheck::fail(op, opcheck::desc("x", x) + " must be 4-d [N, C, H, W]");
  opcheck::like(op, "y", y, {x.size(0), x.size(1), 2 * x.size(2), 2 * x.size(3)}, io);
  opcheck::same_device(op, x.device(), {{"y", &y}});
  if (x.numel() > 0 && x.raw() == y.raw()) opcheck::fail(op, "y must not alias x");
  if (opcheck::on_cuda(op, x)) {
#ifdef VT_CUDA
    if (io == DType::BF16)
      return cuda::upsample_nearest2x_bf16(x.raw(), y.raw(), x.size(0) * x.size(1), x.size(2), x.size(3));
    return cuda::upsample_nearest2x(x.f32(), y.f32(), x.size(0) * x.size(1), x.size(2), x.size(3));
#endif
  }
  cpu::upsample_nearest2x(x.f32(), y.f32(), x.size(0) * x.size(1), x.size(2), x.size(3));
}

}  // namespace vt
