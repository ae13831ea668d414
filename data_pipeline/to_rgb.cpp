#include "data_pipeline/to_rgb.h"

#include <algorithm>
#include <cstdint>

#include <opencv2/imgproc.hpp>

#include "data_pipeline/decode.h"

namespace vt {

namespace {

inline uint8_t muldiv255(int a, int b) {
  const int t = a * b + 128;
  return static_cast<uint8_t>(((t >> 8) + t) >> 8);
}

}  // namespace

cv::Mat cmyk_to_rgb(const cv::Mat& cmyk, bool inverted) {
  CV_Assert(cmyk.type() == CV_8UC4);
  cv::Mat rgb(cmyk.rows, cmyk.cols, CV_8UC3);
  for (int y = 0; y < cmyk.rows; ++y) {
    const uint8_t* s = cmyk.ptr<uint8_t>(y);
    uint8_t* o = rgb.ptr<uint8_t>(y);
    for (int x = 0; x < cmyk.cols; ++x, s += 4, o += 3) {
      const int k = inverted ? 255 - s[3] : s[3];
      const int nk = 255 - k;
      for (int c = 0; c < 3; ++c) {
        const int ink = inverted ? 255 - s[c] : s[c];
        o[c] = static_cast<uint8_t>(std::max(0, nk - muldiv255(ink, nk)));
      }
    }
  }
  return rgb;
}

cv::Mat to_rgb8(const cv::Mat& decoded, const std::string& name) {
  cv::Mat x = decoded;
  if (x.depth() == CV_16U) {
    // As Pillow reads 16-bit files (tools/png16_fixtures.py): gray opens as
    // mode I;16, whose conversion to RGB clips to [0, 255]; colour and
    // gray + alpha keep the high byte of each sample (truncation, not
    // rounding).
    cv::Mat y(x.rows, x.cols, CV_8UC(x.channels()));
    if (x.channels() == 1) {
      x.convertTo(y, CV_8U);  // saturating: values above 255 become 255
    } else {
      const int n = x.cols * x.channels();
      for (int r = 0; r < x.rows; ++r) {
        const uint16_t* s = x.ptr<uint16_t>(r);
        uint8_t* o = y.ptr<uint8_t>(r);
        for (int i = 0; i < n; ++i) o[i] = static_cast<uint8_t>(s[i] >> 8);
      }
    }
    x = y;
  } else if (x.depth() != CV_8U) {
    throw CorruptImage("cannot decode '" + name + "': unsupported sample depth (OpenCV depth " +
                       std::to_string(x.depth()) + ")");
  }
  cv::Mat rgb;
  switch (x.channels()) {
    case 1: cv::cvtColor(x, rgb, cv::COLOR_GRAY2RGB); break;
    case 2: {  // gray + alpha, as PIL's "LA" -> "RGB"
      cv::Mat gray;
      cv::extractChannel(x, gray, 0);
      cv::cvtColor(gray, rgb, cv::COLOR_GRAY2RGB);
      break;
    }
    case 3: cv::cvtColor(x, rgb, cv::COLOR_BGR2RGB); break;
    case 4: cv::cvtColor(x, rgb, cv::COLOR_BGRA2RGB); break;
    default:
      throw CorruptImage("cannot decode '" + name + "': unsupported channel count " + std::to_string(x.channels()));
  }
  return rgb;
}

}  // namespace vt
