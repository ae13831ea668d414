#include "data_pipeline/decode_other.h"

#include <opencv2/imgcodecs.hpp>

#include "data_pipeline/decode.h"

namespace vt {

cv::Mat decode_other_format(const uint8_t* data, size_t size, const std::string& name, ImageFormat format) {
  cv::Mat m;
  try {
    const cv::Mat raw(1, static_cast<int>(size), CV_8U, const_cast<uint8_t*>(data));
    m = cv::imdecode(raw, cv::IMREAD_UNCHANGED);
  } catch (const cv::Exception& e) {
    throw CorruptImage("cannot decode '" + name + "': " + e.what());
  }
  if (m.empty()) throw CorruptImage("cannot decode '" + name + "': corrupt " + image_format_name(format) + " data");
  return m;
}

}  // namespace vt
