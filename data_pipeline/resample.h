// PIL-compatible resampling of 8-bit RGB images (cv::Mat CV_8UC3).
//
// resize_pil reproduces Pillow's Image.resize(size, filter, box)
// (libImaging/Resample.c): separable convolution, filter support scaled by
// the downscale factor (antialiasing), coefficients normalised then
// quantised to 22-bit fixed point, 8-bit rounding and clipping after each
// pass. The pass order is Pillow 13's (python-pillow/Pillow#9549): vertical
// first when the height shrinks by more than twice as many pixels as the
// width, else horizontal first. Pillow <= 12 always went horizontal first,
// so those resizes differ from an older Pillow by a few levels. Bicubic
// uses a = -0.5 (OpenCV's INTER_CUBIC uses a = -0.75 and no antialias, so it
// cannot stand in for it).
//
// affine_pil reproduces Image.transform(size, AFFINE, (a,b,c,d,e,f),
// resample, fillcolor) (libImaging/Geometry.c): output pixel centre
// (x+0.5, y+0.5) maps to the input point (a x' + b y' + c, d x' + e y' + f);
// points outside the input keep the fill colour; bicubic there is PIL's
// transform kernel (a = -1 cubic convolution, edge-clamped taps, result
// truncated to 8 bits).
#pragma once
#include <array>
#include <vector>

#include <opencv2/core.hpp>

namespace vt {

enum class ResampleFilter { Box, Bilinear, Bicubic };

// Resizes the region `box` = (x0, y0, x1, y1) of `src` (input pixel units,
// fractional allowed) to out_w x out_h. An empty box means the whole image.
// Throws std::invalid_argument for a non-CV_8UC3 input or non-positive size.
cv::Mat resize_pil(const cv::Mat& src, int out_w, int out_h, ResampleFilter filter,
                   std::array<double, 4> box = {0, 0, 0, 0});

// resize_pil with its plain C++ passes only: the reference its SIMD passes
// (AVX2 builds) must equal bit for bit (tests/data/test_resample_simd.cpp).
cv::Mat resize_pil_scalar(const cv::Mat& src, int out_w, int out_h, ResampleFilter filter,
                          std::array<double, 4> box = {0, 0, 0, 0});

// The passes resize_pil runs, for another implementation of the same
// resize (the CUDA one, data_pipeline/device/device_rrc.h) to give the same
// bytes: per axis Pillow's fixed-point coefficients (bounds = [first input
// index, tap count] per output index; k = ksize weights per output index,
// 22 fractional bits), which passes are needed and in which order, and the
// input rows the horizontal pass covers when it runs first
// (row_first..row_last; the vertical bounds are then relative to row_first).
// A pass computes, per output sample and channel,
//   clip8((2^21 + sum_t in[first + t] * k[t]) >> 22),  clip8: to [0, 255].
struct PilAxisCoeffs {
  int ksize = 0;
  std::vector<int> bounds, k;
};
struct PilResizePlan {
  PilAxisCoeffs horiz, vert;
  bool need_h = false, need_v = false, vertical_first = false;
  int row_first = 0, row_last = 0;  // horizontal-first: input rows [row_first, row_last)
};
// Same arguments (src size instead of the image) and box rule as resize_pil.
PilResizePlan plan_resize_pil(int src_w, int src_h, int out_w, int out_h, ResampleFilter filter,
                              std::array<double, 4> box = {0, 0, 0, 0});

enum class AffineFilter { Nearest, Bilinear, Bicubic };

// Same size as src. `m` = (a, b, c, d, e, f) maps output to input.
cv::Mat affine_pil(const cv::Mat& src, const std::array<double, 6>& m, AffineFilter filter,
                   const cv::Vec3b& fill);

}  // namespace vt
