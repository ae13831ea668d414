// The non-JPEG formats of decode_image (PNG, BMP, PBM/PGM/PPM, TIFF, WebP)
// through OpenCV's imgcodecs. decode_image (decode.h) has sniffed the format
// and checked the header's size before calling this.
//
// It is a translation unit of its own, the only one of vt_data that uses
// imgcodecs, so that a program reading JPEGs only can leave imgcodecs and
// its ~180 MB of codec libraries (GDAL, DICOM, ...) out: defining this
// function itself, it never pulls decode_other.o from the archive
// (bench/gpu/bench_input, carried to GPU machines; scripts/bundle_gpu_build.sh).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include <opencv2/core.hpp>

#include "data_pipeline/image_header.h"

namespace vt {

// cv::imdecode(IMREAD_UNCHANGED) of `data` (a `format` file, not JPEG):
// 8- or 16-bit, 1 to 4 channels, as to_rgb8 (to_rgb.h) takes it. Throws
// CorruptImage naming `name` when OpenCV cannot decode it.
cv::Mat decode_other_format(const uint8_t* data, size_t size, const std::string& name, ImageFormat format);

}  // namespace vt
