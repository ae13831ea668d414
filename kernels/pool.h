// 2-D pooling, forward only, with torch.nn.functional semantics:
//   max_pool2d(x, k, stride, padding)          (padding never wins the max)
//   avg_pool2d(x, k, stride, padding, count_include_pad)
//     count_include_pad = true : divide by KH*KW
//     count_include_pad = false: divide by the number of in-bounds taps
//                                (TensorFlow's convention; pytorch-fid's
//                                FID Inception blocks use it)
//   global_avg_pool2d: adaptive_avg_pool2d(x, 1), y [N, C] or [N, C, 1, 1].
// Output size uses floor: OH = (H + 2 ph - KH) / sh + 1 (ceil_mode = false).
//
// Shapes (F32, CPU or CUDA): x [N, C, H, W] with W contiguous; y [N, C, OH, OW]
// pre-allocated, W contiguous (may be a channel slice of a concat buffer).
// Errors: std::invalid_argument naming the op and shapes (also padding >
// kernel/2, which PyTorch rejects). CPU through oneDNN; CUDA:
// kernels/cuda/pool.h (max pooling and the global mean give the CPU's bits,
// windowed averages agree to fp32 rounding).
#pragma once
#include "core/tensor.h"

namespace vt {

enum class PoolKind { Max, AvgIncludePad, AvgExcludePad };

struct Pool2dParams {
  PoolKind kind = PoolKind::Max;
  int kernel_h = 2, kernel_w = 2;
  int stride_h = 2, stride_w = 2;
  int pad_h = 0, pad_w = 0;
};

Shape pool2d_output_shape(const Shape& x, const Pool2dParams& p);
void pool2d_forward(const Tensor& x, const Tensor& y, const Pool2dParams& p);

// Mean over H, W; y [N, C] or [N, C, 1, 1], contiguous.
void global_avg_pool2d(const Tensor& x, const Tensor& y);

}  // namespace vt
