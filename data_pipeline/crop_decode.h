// RandomResizedCrop's decode and resize (docs/recipes.md §2), for both
// values of `data.decode`:
//   full: decode the whole image (DCT-scaled by 1/2, 1/4 or 1/8 when
//         data.dct_scaling allows, see rrc_dct_scale), then resize the box;
//   crop: decode only the box's rows and columns at the same scale
//         (jpeg_region.h), then resize the box the same way.
// The box is drawn from the header size with the same draws in both modes,
// the scale and the box's position in the scaled image are computed by the
// same functions, and the decoded pixels of the region equal those of the
// whole decode, so `crop` gives the same uint8 crop as `full`, bit for bit;
// it only skips the work outside the box (the IDCT, upsampling and colour
// conversion of other columns, and everything below the box).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include <opencv2/core.hpp>

#include "data_pipeline/decode_mode.h"
#include "data_pipeline/transforms.h"

namespace vt {

// The DCT scale (1, 1/2, 1/4 or 1/8) for a region_w x region_h region of the
// full image that must still cover out_w x out_h: the largest power-of-two
// reduction keeping it at least that size; 1 when `dct` is false.
// libjpeg-turbo has SIMD inverse DCTs only for these scales; the other
// eighths run plain C and cost more than a full-size decode (measured on
// ../shared/data/imagenet-samples: 7/8 1.9 ms, 5/8 1.4 ms, 1/1 1.2 ms,
// 1/2 1.0 ms per file), so a need of e.g. 0.6 decodes at full size.
double rrc_dct_scale(bool dct, double region_w, double region_h, int out_w, int out_h);

// Resizes the full-resolution box `b` to out x out (Pillow bicubic) from
// `img`, a rectangle of the image scaled to scaled_w x scaled_h whose pixel
// (0, 0) is the scaled image's (ox, oy). Unscaled, this is PIL's crop then
// resize; scaled, the box becomes fractional (factor scaled / full per axis)
// and the resampler is confined to the integer pixels covering it, so it
// never reads beyond the crop by more than one pixel. `img` must hold those
// pixels (std::invalid_argument otherwise).
cv::Mat resize_scaled_box(const cv::Mat& img, int ox, int oy, int full_w, int full_h, int scaled_w, int scaled_h,
                          const CropBox& b, int out);

// `data.decode: crop` for one JPEG whose header declares full_w x full_h:
// decodes only the pixels resize_scaled_box needs for `b` at
// rrc_dct_scale(dct, ...) and returns the out x out crop in *img. Returns
// false when decode_jpeg_region does not take the file (jpeg_region.h:
// no final EOI, CMYK, ...); the caller then decodes it in full. Throws
// CorruptImage naming `name` as decode_image does.
bool decode_crop_resize(const uint8_t* bytes, size_t n, const std::string& name, bool dct, int full_w, int full_h,
                        const CropBox& b, int out, cv::Mat* img);

}  // namespace vt
