// Input normalisation of a uint8 image batch, so the loader can upload
// uint8 (4x fewer bytes than fp32) and the device produces the model input:
//   out[b, c, y, x] = u8[b, y, x, c] * a_c + b_c,
//   a_c = 1 / (255 std_c),  b_c = -mean_c / std_c   (fp32 constants),
// i.e. torchvision's ToTensor + Normalize ((v/255 - mean)/std) written as
// the same fp32 expression as data_pipeline's to_chw_normalized (v * a + b,
// no fused multiply-add), so the CPU and CUDA results are the same bits
// (tests/cuda/test_cuda_image_prep.cpp) and equal the loader's expression.
//
// u8 [B, H, W, C] U8 contiguous (decoded HWC); mean, std C entries each
// (std > 0); out [B, C, H, W] F32 contiguous, or BF16 on CUDA (one rounding
// of the fp32 value). CPU: kernels/cpu/image_prep.h (OpenMP over rows);
// CUDA: kernels/cuda/image_prep.h. Errors: std::invalid_argument naming the
// op and the tensor or value.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace vt {

void normalize_u8_hwc(const Tensor& u8, const std::vector<float>& mean, const std::vector<float>& std,
                      const Tensor& out);

}  // namespace vt
