// 2-D convolution, forward only (inference: the FID Inception network).
// Semantics of torch.nn.functional.conv2d with zero padding:
//   y[n, o, i, j] = bias[o] + sum_{c, a, b} x[n, g*C/G + c, i*sh - ph + a*dh, j*sw - pw + b*dw]
//                                          * w[o, c, a, b]          (g = o / (O/G))
// optionally followed by ReLU (fused as a oneDNN post-op, used for folded
// Conv+BN+ReLU units).
//
// Shapes (all tensors on one device):
//   x    [N, C, H, W]           any strides with W contiguous (stride 1)
//   w    [O, C/G, KH, KW]       contiguous
//   bias [O] contiguous, or an undefined Tensor for no bias
//   y    [N, O, OH, OW]         pre-allocated; any strides with OW contiguous,
//                               so y may be a channel slice of a larger
//                               [N, Ctot, OH, OW] buffer (zero-copy concat)
//   OH = (H + ph + ph_end - dh (KH - 1) - 1) / sh + 1   (floor), likewise OW;
//   padding is symmetric (ph_end = ph) unless pad_h_end / pad_w_end are set
//   (diffusers' Downsample2D pads (0, 1, 0, 1), i.e. right and bottom only).
// Dtypes: x, w, y F32 (CPU or CUDA), or all three BF16 on CUDA only (what
// PyTorch runs for a bf16 nn.Conv2d: cuDNN with bf16 data and fp32
// accumulation, ConvMath::Bf16); bias always F32 (a caller following a bf16
// module passes its bf16 bias values widened to fp32, the same numbers).
// BF16 through cuDNN: y = bf16(bf16(conv) + bias), the conv rounded to bf16
// and the bias added by a separate pass and rounded again, as PyTorch's
// cudnn_convolution + add_ of the bias; through the hand-written kernel
// (no cuDNN, or none for the shape): operands widened to fp32 exactly, y =
// bf16(conv + bias) rounded once.
// Errors: std::invalid_argument naming the op, the tensor and its shape (or
// its dtype: BF16 on the CPU, or mixed dtypes).
// CPU through oneDNN (primitives cached by shape/strides; Winograd and a
// once-per-weight reorder on request: cpu_winograd, frozen_weights). CUDA: cuDNN in
// builds with it (VT_CUDNN_CONV, kernels/cuda/conv_cudnn.h: fp32 without
// TF32 unless Conv2dParams::tf32; a batch past cuDNN's 2^31 - 1 element
// tensor limit is cut along N into several cuDNN calls, any N works), else,
// or when cuDNN has no algorithm for the shape (or one image is past that
// limit), or after set_conv_cudnn(false), the hand-written fp32
// implicit-GEMM kernel (kernels/cuda/conv.h; no TF32; BF16 as above). Same shapes and
// strides on every path; fp32 results agree with the CPU to fp32
// accumulation-order rounding.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vt {

struct Conv2dParams {
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;          // top, left
  int pad_h_end = -1, pad_w_end = -1;  // bottom, right; -1 = same as pad_h / pad_w
  int dilation_h = 1, dilation_w = 1;
  int groups = 1;
  bool relu = false;  // y = max(0, conv(x) + bias)
  // CUDA with cuDNN only: TF32 tensor cores allowed (ConvMath::Tf32, inputs
  // rounded to 10 mantissa bits). Ignored on the CPU and by the hand-written
  // kernel, which stay fp32, and for BF16 tensors.
  bool tf32 = false;
  // CPU only: a 3x3 stride-1 dense convolution may use oneDNN's Winograd
  // F(4x4, 3x3) kernel (2-3x the direct kernel's speed at 128-512 channels on
  // AVX-512; its rounding error at those sizes is that of the direct fp32
  // kernel, which the VAE parity tests check against float64 diffusers).
  // Falls back to the direct kernel where oneDNN has no Winograd
  // implementation (other ISAs, odd channel counts) and below 64 input
  // channels, where the direct one is faster. Off by default: the FID
  // Inception keeps the direct kernel that pytorch-fid's features were
  // matched with. Ignored on CUDA.
  bool cpu_winograd = false;
  // CPU only: w does not change while its storage lives (a frozen model's
  // weights), so its reorder into oneDNN's layout is made on the first call
  // and reused (one copy per weight tensor; a copy whose storage was freed
  // is dropped when the next new weight of that shape comes). Memory: a
  // Winograd copy is 4x its weight (6x6 tiles of 3x3 kernels); the VAE's
  // copies add about 1.7 GB to the process. Ignored on CUDA.
  bool frozen_weights = false;
};

// [N, O, OH, OW] for input shape [N, C, H, W] and weight shape [O, C/G, KH, KW];
// throws when the output would be empty or shapes disagree.
Shape conv2d_output_shape(const Shape& x, const Shape& w, const Conv2dParams& p);

void conv2d_forward(const Tensor& x, const Tensor& w, const Tensor& bias, const Tensor& y,
                    const Conv2dParams& p);

// CUDA path of conv2d_forward: true when this build has cuDNN and it is on
// (the default); set_conv_cudnn(false) selects the hand-written kernel
// (benchmarks compare the two). No effect in builds without cuDNN.
void set_conv_cudnn(bool on);
bool conv_uses_cudnn();

}  // namespace vt
