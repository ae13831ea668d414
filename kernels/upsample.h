// Nearest-neighbour 2x upsampling of [N, C, H, W] images, forward only (the
// frozen VAE decoder's Upsample2D), exactly
// torch.nn.functional.interpolate(x, scale_factor=2.0, mode="nearest"):
//   y[n, c, i, j] = x[n, c, i / 2, j / 2]   (integer division)
// Shapes (both on one device, one dtype: F32 on CPU or CUDA, or BF16 on
// CUDA): x [N, C, H, W] contiguous; y [N, C, 2H, 2W] contiguous, not x.
// CPU: OpenMP over the N*C planes. CUDA (kernels/cuda/upsample.h): one thread
// per output element. Both copy values, so they agree bit for bit.
// Errors: std::invalid_argument naming the op and the shapes.
#pragma once
#include "core/tensor.h"

namespace vt {

void upsample_nearest2x(const Tensor& x, const Tensor& y);

}  // namespace vt
