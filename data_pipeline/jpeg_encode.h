// JPEG encoding of 8-bit RGB pixels with libjpeg-turbo's TurboJPEG API
// (tjCompress2, default flags: accurate-enough islow DCT, Huffman tables
// from the standard): what `cifar10_to_folder` writes and what `vtrain pack`
// re-encodes oversized images with. Chroma is subsampled 4:2:0, Pillow's
// default for Image.save(..., "JPEG", quality=Q) below quality 95 and
// OpenCV's cv::imencode default.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vt {

// `rgb`: packed rows of width * 3 bytes (R, G, B), `height` rows; quality in
// [1, 100]. One TurboJPEG compressor per thread. Throws std::runtime_error
// naming `name` when the encoder fails, std::invalid_argument for a bad
// size or quality.
std::vector<uint8_t> encode_jpeg_rgb(const uint8_t* rgb, int width, int height, int quality,
                                     const std::string& name);

}  // namespace vt
