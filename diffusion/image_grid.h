// Sample images out of the sampler: ADM's uint8 conversion and a PNG grid.
#pragma once
#include <string>

#include "core/tensor.h"

namespace vt {

// DiT sample.py / ADM: clamp(127.5 x + 128, 0, 255) truncated to uint8, NHWC.
// x [N, C, H, W] F32 CPU (values ~[-1, 1]) -> U8 [N, H, W, C].
Tensor to_uint8_nhwc(const Tensor& x);

// Writes images U8 [N, H, W, C] (C = 1 or 3; C > 3 shows the first 3
// channels) as one PNG grid, `nrow` images per row (0: ceil(sqrt(N))), with
// `padding` pixels of black between them, as torchvision.utils.save_image.
// Throws std::runtime_error naming the path when OpenCV cannot write it.
void save_png_grid(const std::string& path, const Tensor& images, int nrow = 0, int padding = 2);

}  // namespace vt
