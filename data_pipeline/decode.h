// Image decoding to 8-bit RGB (cv::Mat CV_8UC3, channel order R, G, B).
//
// The format is decided by the file's first bytes, never its extension
// (ImageNet holds a PNG named .JPEG), and only the formats an ImageFolder
// reads are decoded (data_pipeline/image_header.h: JPEG, PNG, BMP, PBM/PGM/PPM,
// TIFF, WebP, torchvision's list). Anything else is refused with CorruptImage
// before any codec sees it: cv::imdecode alone would try every codec OpenCV
// was built with, and Debian's GDCM (DICOM) abort()s on a 132-byte file.
// JPEG (FF D8 FF) goes through libjpeg-turbo's TurboJPEG API, optionally with
// DCT-domain downscaling; the other five through cv::imdecode, whose first
// matching signature is then the sniffed format's decoder.
//
// Images declaring more than kMaxImagePixels (Pillow's decompression-bomb
// limit) in their header are refused with CorruptImage before decoding.
//
// Conversions follow PIL's Image.convert('RGB') where it is well defined:
// grayscale is replicated; alpha is dropped (not composited); palette images
// are expanded; CMYK/YCCK JPEGs carrying an Adobe APP14 marker are taken as
// inverted (Photoshop's convention, as PIL's "CMYK;I"), then
// r = (255 - k) - muldiv255(c, 255 - k) per channel like PIL's cmyk2rgb;
// 16-bit samples are scaled to 8 bits (v * 255 / 65535, rounded) rather
// than clipped as PIL does for mode "I". EXIF orientation is not applied.
//
// A JPEG that lacks only its final EOI marker decodes (the marker is
// appended); a JPEG cut inside its entropy-coded data, or any undecodable
// input, throws CorruptImage whose message names the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <opencv2/core.hpp>

#include "data_pipeline/image_header.h"

namespace vt {

class CorruptImage : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The error an unreadable image ends a run with under data.on_corrupt=error
// (training, evaluation, vtrain pack, dittrain extract): its own message
// (the file and what is wrong) and how to go on without the file.
CorruptImage with_skip_hint(const CorruptImage& e);

// Full-resolution size from the header (JPEG: TurboJPEG header; others: a
// full decode). Throws CorruptImage naming `name` like decode_image.
struct ImageSize {
  int width = 0, height = 0;
};
ImageSize probe_image(const uint8_t* data, size_t size, const std::string& name);

// A decoded image and the factor it was reduced by (1 unless DCT scaling was
// used): rgb.cols = ceil(full_width * scale), likewise rows.
struct DecodedImage {
  cv::Mat rgb;
  int full_width = 0, full_height = 0;
};

// Decodes to RGB. `min_scale` in (0, 1]: a JPEG may be decoded with the
// smallest TurboJPEG scaling factor num/den >= min_scale (1/8 steps), i.e.
// the cheapest decode still at least as large as the caller needs; pass 1
// for a full-size decode. Non-JPEG input is always decoded at full size.
DecodedImage decode_image(const uint8_t* data, size_t size, const std::string& name,
                          double min_scale = 1.0);

// The scaling factor decode_image picks for `min_scale`, as num/den.
void choose_dct_scale(double min_scale, int* num, int* den);

// Throws CorruptImage naming `name` when w * h exceeds kMaxImagePixels.
// Header sizes are up to 2^32 - 1 each (PNG), so the product may overflow.
void check_pixel_limit(int64_t w, int64_t h, const std::string& name);

// Whole file into memory; throws std::runtime_error naming the path.
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace vt
