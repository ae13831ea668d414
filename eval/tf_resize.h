// TensorFlow 1's legacy tf.image.resize_bilinear (align_corners=False,
// half_pixel_centers=False), the resize inside the Inception graph that
// ADM's evaluator (openai/guided-diffusion, evaluations/evaluator.py) feeds
// with [0, 255] images (its "ResizeBilinear" op, then x -> (x - 128) / 128).
//
// Algorithm (tensorflow/core/kernels/image/resize_bilinear_op.cc, legacy
// scaler), all in float32 as TensorFlow computes it:
//   scale = float(in) / float(out); src(i) = float(i) * scale;
//   lo = floor(src), hi = min(ceil(src), in - 1), t = src - floor(src);
//   top = tl + (tr - tl) * tx, bottom = bl + (br - bl) * tx,
//   out = top + (bottom - top) * ty.
// Unlike PyTorch's align_corners=False there is no half-pixel offset: the
// output grid starts on the first input pixel and never reads past the
// last, so the image shifts by up to half an input pixel.
#pragma once
#include <cstdint>

namespace vt {

// src: one uint8 HWC RGB image [h, w, 3] (h, w >= 1). dst: float32 CHW
// [3, oh, ow] (oh, ow >= 1) with values in [0, 255] (not normalised).
void tf1_resize_bilinear_u8(const uint8_t* src, int64_t h, int64_t w, float* dst, int64_t oh, int64_t ow);

}  // namespace vt
