// Image decoding as an ImageFolder does it (data_pipeline/decode.h): format
// sniffing, header limits, the TurboJPEG path with DCT scaling and the
// OpenCV path, then the project's own conversions to RGB
// (data_pipeline/to_rgb.h) on a raw matrix built from the same bytes. Bad
// input must be a CorruptImage; anything else escaping is a finding. The
// codecs are uninstrumented system libraries, so coverage guides the
// project's code around them.
#include <cstdint>
#include <vector>

#include "data_pipeline/decode.h"
#include "data_pipeline/to_rgb.h"
#include "fuzz/fuzz_util.h"

namespace {

void check_decode(const uint8_t* data, size_t size) {
  // The last byte picks the DCT scale, as the loader's crop size would.
  const double min_scale = size ? (1 + data[size - 1] % 8) / 8.0 : 1.0;
  vt::DecodedImage d;
  try {
    d = vt::decode_image(data, size, "fuzz.img", min_scale);
  } catch (const vt::CorruptImage&) {
    return;
  }
  if (d.rgb.empty() || d.rgb.type() != CV_8UC3) vt_fuzz::fail("decode_image returned no RGB8 image");
  if (static_cast<int64_t>(d.full_width) * d.full_height > vt::kMaxImagePixels)
    vt_fuzz::fail("decode_image passed the pixel limit");
  if (d.rgb.cols > d.full_width || d.rgb.rows > d.full_height) vt_fuzz::fail("decoded larger than the full size");
  const vt::ImageSize p = vt::probe_image(data, size, "fuzz.img");
  if (p.width != d.full_width || p.height != d.full_height) vt_fuzz::fail("probe_image disagrees with decode_image");
}

// Bytes 0-3 choose rows, columns, depth and channels; the rest (cycled) fill
// the pixels.
void check_conversions(const uint8_t* data, size_t size) {
  if (size < 5) return;
  static const int depths[] = {CV_8U, CV_16U, CV_8S, CV_16S, CV_32F};
  const int rows = 1 + data[0] % 16, cols = 1 + data[1] % 16;
  const int depth = depths[data[2] % 5], channels = 1 + data[3] % 5;
  const uint8_t* px = data + 4;
  const size_t n = size - 4;
  cv::Mat m(rows, cols, CV_MAKETYPE(depth, channels));
  for (size_t i = 0; i < m.total() * m.elemSize(); ++i) m.data[i] = px[i % n];
  try {
    const cv::Mat rgb = vt::to_rgb8(m, "fuzz.raw");
    if (rgb.type() != CV_8UC3 || rgb.rows != rows || rgb.cols != cols) vt_fuzz::fail("to_rgb8 output layout");
  } catch (const vt::CorruptImage&) {
    if ((depth == CV_8U || depth == CV_16U) && channels <= 4) vt_fuzz::fail("to_rgb8 refused a supported layout");
  }
  cv::Mat cmyk(rows, cols, CV_8UC4);
  for (size_t i = 0; i < cmyk.total() * 4; ++i) cmyk.data[i] = px[i % n];
  for (bool inverted : {false, true}) {
    const cv::Mat rgb = vt::cmyk_to_rgb(cmyk, inverted);
    if (rgb.type() != CV_8UC3 || rgb.rows != rows || rgb.cols != cols) vt_fuzz::fail("cmyk_to_rgb output layout");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_decode(data, size);
  check_conversions(data, size);
  return 0;
}
