// Bilinear resize of [N, C, H, W] images, exactly
// torch.nn.functional.interpolate(x, size=(OH, OW), mode="bilinear",
//                                 align_corners=False, antialias=False):
//   src = max(0, (dst + 0.5) * (in / out) - 0.5)
//   i0 = floor(src), i1 = min(i0 + 1, in - 1), l = src - i0
//   y = (1-ly)((1-lx) x[i0,j0] + lx x[i0,j1]) + ly((1-lx) x[i1,j0] + lx x[i1,j1])
// No antialiasing: downscaling samples, it does not average (as pytorch-fid).
// The scale is in/out (PyTorch's rule when `size` is given), computed in
// float like PyTorch so that coordinates agree bit for bit.
//
// Shapes (F32, CPU or CUDA; CUDA: kernels/cuda/resize.h, the same bits):
// x [N, C, H, W] contiguous; y [N, C, OH, OW] contiguous.
// Same size in and out copies. Errors: std::invalid_argument naming shapes.
#pragma once
#include "core/tensor.h"

namespace vt {

void resize_bilinear(const Tensor& x, const Tensor& y);

}  // namespace vt
