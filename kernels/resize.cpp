#include "kernels/resize.h"

#include "kernels/cpu/resize.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/resize.h"
#endif

namespace vt {

void resize_bilinear(const Tensor& x, const Tensor& y) {
  const char* op = "resize_bilinear";
  opcheck::dtype(op, "x", x, DType::F32);
  opcheck::contiguous(op, "x", x);
  opcheck::dtype(op, "y", y, DType::F32);
  opcheck::contiguous(op, "y", y);
  if (x.dim() != 4 || y.dim() != 4 || x.size(0) != y.size(0) || x.size(1) != y.size(1))
    opcheck::fail(op, opcheck::desc("x", x) + " and " + opcheck::desc("y", y) +
                          " must be [N, C, H, W] and [N, C, OH, OW]");
  if (x.size(2) < 1 || x.size(3) < 1 || y.size(2) < 1 || y.size(3) < 1)
    opcheck::fail(op, opcheck::desc("x", x) + " and " + opcheck::desc("y", y) + " must have non-empty planes");
  opcheck::same_device(op, x.device(), {{"y", &y}});
  if (opcheck::on_cuda(op, x)) {
#ifdef VT_CUDA
    cuda::resize_bilinear(x.f32(), y.f32(), x.size(0) * x.size(1), x.size(2), x.size(3), y.size(2), y.size(3));
#endif
    return;
  }
  cpu::resize_bilinear(x.f32(), y.f32(), x.size(0) * x.size(1), x.size(2), x.size(3), y.size(2), y.size(3));
}

}  // namespace vt
