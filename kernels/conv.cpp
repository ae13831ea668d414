#include "kernels/conv.h"

#include <string>

#include "kernels/cpu/conv.h"
#include "kernels/elementwise.h"
#include "kernels/op_checks.h"
#ifdef VT_CUDA
#include "kernels/cuda/conv.h"
#include "kernels/cuda/conv_cudnn.h"
#endif

namespace vt {
namespace {

int pad_h_end(const Conv2dParams& p) { return p.pad_h_end < 0 ? p.pad_h : p.pad_h_end; }
int pad_w_end(const Conv2dParams& p) { return p.pad_w_end < 0 ? p.pad_w : p.pad_w_end; }

std::string params_str(const Conv2dParams& p) {
  return "stride (" + std::to_string(p.stride_h) + ", " + std::to_string(p.stride_w) + "), padding (" +
         std::to_string(p.pad_h) + ", " + std::to_string(p.pad_w) + "; end " + std::to_string(pad_h_end(p)) + ", " +
         std::to_string(pad_w_end(p)) + "), dilation (" + std::to_string(p.dilation_h) +
         ", " + std::to_string(p.dilation_w) + "), groups " + std::to_string(p.groups);
}

#ifdef VT_CUDA
// BF16 where cuDNN is absent, off or has no algorithm: the operands widened
// to fp32 (exact), the hand-written fp32 kernel, the result (bias included)
// rounded once to bf16 and copied into y's strides.
void conv2d_bf16_by_fp32(const Conv2dDesc& d0, const Tensor& x, const Tensor& w, const float* b, const Tensor& y) {
  const Device dev = x.device();
  Tensor xf = Tensor::empty(x.shape(), DType::F32, dev), wf = Tensor::empty(w.shape(), DType::F32, dev);
  convert(x.contiguous(), xf);
  convert(w, wf);
  Tensor yf = Tensor::empty(y.shape(), DType::F32, dev), yb = Tensor::empty(y.shape(), DType::BF16, dev);
  Conv2dDesc d = d0;
  for (int i = 0; i < 4; ++i) d.x_strides[i] = xf.strides()[i], d.y_strides[i] = yf.strides()[i];
  cuda::conv2d_forward(d, xf.f32(), wf.f32(), b, yf.f32());
  convert(yf, yb);
  Tensor out = y;  // a handle on y's storage
  out.copy_from(yb);
}
#endif

}  // namespace

Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p) {
  const char* op = "conv2d";
  if (x.size() != 4 || w.size() != 4)
    opcheck::fail(op, "x " + shape_str(x) + " and w " + shape_str(w) + " must be 4-d ([N, C, H, W], [O, C/G, KH, KW])");
  if (p.stride_h < 1 || p.stride_w < 1 || p.dilation_h < 1 || p.dilation_w < 1 || p.groups < 1 || p.pad_h < 0 ||
      p.pad_w < 0 || p.pad_h_end < -1 || p.pad_w_end < -1)
    opcheck::fail(op, "invalid parameters: " + params_str(p));
  if (x[1] % p.groups != 0 || w[0] % p.groups != 0 || w[1] * p.groups != x[1])
    opcheck::fail(op, "x " + shape_str(x) + " and w " + shape_str(w) + " disagree on channels for " + params_str(p));
  const int64_t ph = p.pad_h + pad_h_end(p), pw = p.pad_w + pad_w_end(p);
  const int64_t oh = (x[2] + ph - p.dilation_h * (w[2] - 1) - 1) / p.stride_h + 1;
  const int64_t ow = (x[3] + pw - p.dilation_w * (w[3] - 1) - 1) / p.stride_w + 1;
  if (x[2] + ph < p.dilation_h * (w[2] - 1) + 1 || x[3] + pw < p.dilation_w * (w[3] - 1) + 1 ||
      oh < 1 || ow < 1)
    opcheck::fail(op, "input x " + shape_str(x) + " is smaller than kernel w " + shape_str(w) + " with " +
                          params_str(p));
  return {x[0], w[0], oh, ow};
}

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y, const Conv2dParams& p) {
  const char* op = "conv2d_forward";
  const DType io = opcheck::io_dtype(op, "x", x);
  opcheck::dtype(op, "w", w, io);
  opcheck::contiguous(op, "w", w);
  const Shape out = conv2d_output_shape(x.shape(), w.shape(), p);
  opcheck::dtype(op, "y", y, io);
  opcheck::shape(op, "y", y, out);
  if (x.strides()[3] != 1 && x.size(3) > 1) opcheck::fail(op, opcheck::desc("x", x) + " must have W stride 1");
  if (y.strides()[3] != 1 && y.size(3) > 1) opcheck::fail(op, opcheck::desc("y", y) + " must have W stride 1");
  if (bias.defined()) {
    opcheck::dtype(op, "bias", bias, DType::F32);
    opcheck::contiguous(op, "bias", bias);
    opcheck::shape(op, "bias", bias, {w.size(0)});
  }
  opcheck::same_device(op, x.device(), {{"w", &w}, {"bias", &bias}, {"y", &y}});
  Conv2dDesc d{};
  d.n = x.size(0), d.c = x.size(1), d.h = x.size(2), d.w = x.size(3);
  d.o = w.size(0), d.kh = w.size(2), d.kw = w.size(3), d.oh = out[2], d.ow = out[3];
  d.sh = p.stride_h, d.sw = p.stride_w, d.ph = p.pad_h, d.pw = p.pad_w;
  d.dh = p.dilation_h, d.dw = p.dilation_w, d.groups = p.groups, d.relu = p.relu;
  for (int i = 0; i < 4; ++i) d.x_strides[i] = x.strides()[i], d.y_strides[i] = y.strides()[i];
  if (opcheck::on_cuda(op, x)) {
#ifdef VT_CUDA
    const float* b = bias.defined() ? bias.f32() : nullptr;
    const bool bf16 = io == DType::BF16;
#ifdef VT_CUDNN_CONV
    const cuda::ConvMath math = bf16 ? cuda::ConvMath::Bf16 : p.tf32 ? cuda::ConvMath::Tf32 : cuda::ConvMath::Fp32;
    if (cuda::conv_cudnn() && cuda::conv2d_cudnn(d, x.raw(), w.raw(), b, y.raw(), math)) return;
#endif
    if (bf16) return conv2d_bf16_by_fp32(d, x, w, b, y);
    cuda::conv2d_forward(d, x.f32(), w.f32(), b, y.f32());
#endif
    return;
  }
  cpu::CpuConvOptions opt;
  opt.winograd = p.cpu_winograd;
  if (p.frozen_weights) opt.weights_owner = w.storage();
  cpu::conv2d_forward(d, x.f32(), w.f32(), bias.defined() ? bias.f32() : nullptr, y.f32(), opt);
}

void set_conv_cudnn(bool on) {
#ifdef VT_CUDNN_CONV
  cuda::set_conv_cudnn(on);
#else
  (void)on;
#endif
}

bool conv_uses_cudnn() {
#ifdef VT_CUDNN_CONV
  return cuda::conv_cudnn();
#else
  return false;
#endif
}

}  // namespace vt
