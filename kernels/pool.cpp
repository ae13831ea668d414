#include "kernels/pool.h"

#include <string>

#include "kernels/cpu/pool.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/pool.h"
#endif

namespace vt {

Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p) {
  const char* op = "pool2d";
  const std::string ps = "kernel (" + std::to_string(p.kernel_h) + ", " + std::to_string(p.kernel_w) + "), stride (" +
                         std::to_string(p.stride_h) + ", " + std::to_string(p.stride_w) + "), padding (" +
                         std::to_string(p.pad_h) + ", " + std::to_string(p.pad_w) + ")";
  if (x.size() != 4) opcheck::fail(op, "x " + shape_str(x) + " must be 4-d [N, C, H, W]");
  if (p.kernel_h < 1 || p.kernel_w < 1 || p.stride_h < 1 || p.stride_w < 1 || p.pad_h < 0 || p.pad_w < 0 ||
      2 * p.pad_h > p.kernel_h || 2 * p.pad_w > p.kernel_w)
    opcheck::fail(op, "invalid parameters " + ps + " (padding must be at most half the kernel)");
  if (x[2] + 2 * p.pad_h < p.kernel_h || x[3] + 2 * p.pad_w < p.kernel_w)
    opcheck::fail(op, "input x " + shape_str(x) + " is smaller than the window " + ps);
  const int64_t oh = (x[2] + 2 * p.pad_h - p.kernel_h) / p.stride_h + 1;
  const int64_t ow = (x[3] + 2 * p.pad_w - p.kernel_w) / p.stride_w + 1;
  return {x[0], x[1], oh, ow};
}

void pool2d_forward(const Tensor& x, const Tensor& y, const Pool2dParams& p) {
  const char* op = "pool2d_forward";
  opcheck::dtype(op, "x", x, DType::F32);
  opcheck::dtype(op, "y", y, DType::F32);
  const Shape out = pool2d_output_shape(x.shape(), p);
  opcheck::shape(op, "y", y, out);
  if (x.strides()[3] != 1 && x.size(3) > 1) opcheck::fail(op, opcheck::desc("x", x) + " must have W stride 1");
  if (y.strides()[3] != 1 && y.size(3) > 1) opcheck::fail(op, opcheck::desc("y", y) + " must have W stride 1");
  opcheck::same_device(op, x.device(), {{"y", &y}});
  Pool2dDesc d{};
  d.n = x.size(0), d.c = x.size(1), d.h = x.size(2), d.w = x.size(3), d.oh = out[2], d.ow = out[3];
  d.kind = p.kind == PoolKind::Max ? 0 : p.kind == PoolKind::AvgIncludePad ? 1 : 2;
  d.kh = p.kernel_h, d.kw = p.kernel_w, d.sh = p.stride_h, d.sw = p.stride_w, d.ph = p.pad_h, d.pw = p.pad_w;
  for (int i = 0; i < 4; ++i) d.x_strides[i] = x.strides()[i], d.y_strides[i] = y.strides()[i];
  if (opcheck::on_cuda(op, x)) {
#ifdef VT_CUDA
    cuda::pool2d_forward(d, x.f32(), y.f32());
#endif
    return;
  }
  cpu::pool2d_forward(d, x.f32(), y.f32());
}

void global_avg_pool2d(const Tensor& x, const Tensor& y) {
  const char* op = "global_avg_pool2d";
  opcheck::dtype(op, "x", x, DType::F32);
  opcheck::contiguous(op, "x", x);
  if (x.dim() != 4) opcheck::fail(op, opcheck::desc("x", x) + " must be 4-d [N, C, H, W]");
  opcheck::dtype(op, "y", y, DType::F32);
  opcheck::contiguous(op, "y", y);
  if (!(y.shape() == Shape{x.size(0), x.size(1)} || y.shape() == Shape{x.size(0), x.size(1), 1, 1}))
    opcheck::fail(op, opcheck::desc("y", y) + " must be [N, C] or [N, C, 1, 1] for " + opcheck::desc("x", x));
  opcheck::same_device(op, x.device(), {{"y", &y}});
  if (opcheck::on_cuda(op, x)) {
#ifdef VT_CUDA
    cuda::global_avg_pool2d(x.f32(), y.f32(), x.size(0) * x.size(1), x.size(2) * x.size(3));
#endif
    return;
  }
  cpu::global_avg_pool2d(x.f32(), y.f32(), x.size(0) * x.size(1), x.size(2) * x.size(3));
}

}  // namespace vt
