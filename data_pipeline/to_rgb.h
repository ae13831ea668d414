// The conversions from what a codec returns to 8-bit RGB, following PIL's
// Image.convert('RGB') where it is well defined (see decode.h): grayscale is
// replicated; alpha is dropped (not composited); 16-bit samples are scaled
// to 8 bits (v * 255 / 65535, rounded); CMYK uses PIL's cmyk2rgb.
#pragma once
#include <string>

#include <opencv2/core.hpp>

namespace vt {

// `decoded` as cv::imdecode(IMREAD_UNCHANGED) returns it: CV_8U or CV_16U
// with 1 (gray), 2 (gray, alpha), 3 (B, G, R) or 4 (B, G, R, A) channels.
// Returns CV_8UC3 in R, G, B order. Other depths or channel counts throw
// CorruptImage (decode.h) naming `name`.
cv::Mat to_rgb8(const cv::Mat& decoded, const std::string& name);

// CV_8UC4 C, M, Y, K (as libjpeg returns it) to CV_8UC3 R, G, B:
// r = (255 - k) - muldiv255(c, 255 - k) per channel, like PIL's cmyk2rgb.
// `inverted`: the samples are stored inverted (Adobe APP14, PIL's "CMYK;I").
cv::Mat cmyk_to_rgb(const cv::Mat& cmyk, bool inverted);

}  // namespace vt
