// Decoding one rectangle of a JPEG, optionally DCT-scaled: the "crop" of
// `data.decode: crop` (docs/recipes.md §2), where RandomResizedCrop's box is
// drawn from the header size and only the rows and columns it covers are
// inverse-transformed, upsampled and colour-converted.
//
// TurboJPEG 3 offers this as tj3SetCroppingRegion + tj3SetScalingFactor;
// the libjpeg-turbo this project builds against (2.1, TurboJPEG 2 API) does
// not, so this uses the libjpeg API of the same library: scale_num /
// scale_denom (DCT scaling by num/den), jpeg_crop_scanline (libjpeg-turbo
// >= 1.5.0: decode a column range, widened on the left to an iMCU boundary)
// and jpeg_skip_scanlines (skip the rows above the region; rows below it are
// never read). The decode settings are TurboJPEG's tjDecompress2 defaults
// (ISLOW IDCT, fancy upsampling, libjpeg's own YCbCr/gray -> RGB), so every
// pixel of the returned region equals the same pixel of decode_image(data,
// size, name, num/den) (decode.h): the region is widened by kRegionMargin
// pixels on each side inside the image, so the upsampler's edge handling at
// the region border (which differs from the interior) never reaches the
// pixels asked for. tests/data/test_jpeg_region.cpp checks the equality on
// 4:2:0, 4:2:2, 4:4:4, grayscale and progressive files at several scales.
//
// Only what this path reproduces exactly is taken; decode_jpeg_region
// returns false (and the caller decodes the whole image as before) for:
//   - a file that does not end with the EOI marker: decode_image appends the
//     marker and tells a file that lacks only EOI from a truncated one by
//     decoding it all, which a partial decode cannot do, so the truncation
//     error stays exactly decode_image's;
//   - CMYK / YCCK (4 components; decode_image applies PIL's cmyk2rgb) and
//     any colour space other than YCbCr, RGB or grayscale.
// Corruption outside the decoded rows and columns' entropy-coded data goes
// unnoticed (rows above the region are entropy-decoded, rows below are not).
// libjpeg errors throw CorruptImage naming `name`; warnings (e.g.
// extraneous bytes before a marker) are accepted, as decode_image does for
// a file that ends with EOI.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include <opencv2/core.hpp>

namespace vt {

// Pixels added on each side of a requested region (inside the image) so
// that border effects of fancy upsampling stay outside it: h2v1/h2v2 fancy
// upsampling reads one neighbouring chroma sample (two output pixels).
constexpr int kRegionMargin = 2;

struct JpegRegion {
  cv::Mat rgb;                    // CV_8UC3 R, G, B: a rectangle of the scaled image
  int x = 0, y = 0;               // position of rgb(0, 0) in the scaled image
  int full_width = 0, full_height = 0;
  int scaled_width = 0, scaled_height = 0;  // ceil(full * num / den), as TJSCALED
};

// Decodes at least the columns [x0, x1) and rows [y0, y1) of the image
// scaled by num/den (a TurboJPEG scaling factor; 1/1 is full size).
// Coordinates are in scaled pixels and must satisfy 0 <= x0 < x1 <=
// scaled_width (likewise y) once the header is read, else
// std::invalid_argument. Returns false for the files listed above, without
// decoding. Throws CorruptImage (decode.h) naming `name` for a bad header,
// more pixels than kMaxImagePixels, or a libjpeg error.
bool decode_jpeg_region(const uint8_t* data, size_t size, const std::string& name, int num, int den, int x0,
                        int y0, int x1, int y1, JpegRegion* out);

}  // namespace vt
