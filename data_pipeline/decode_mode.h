// `data.decode`: how the DeiT train transform decodes an image before
// RandomResizedCrop (data_pipeline/crop_decode.h). Kept apart from the
// decoder so config code (and the config fuzzer, built without OpenCV)
// can name the modes.
#pragma once
#include <stdexcept>
#include <string>

namespace vt {

enum class DecodeMode {
  Full,  // decode the whole image (the reference)
  Crop,  // decode only RandomResizedCrop's box (JPEG; others as Full)
};

// `data.decode` value -> mode; "full" | "crop", else std::invalid_argument.
inline DecodeMode parse_decode_mode(const std::string& s) {
  if (s == "full") return DecodeMode::Full;
  if (s == "crop") return DecodeMode::Crop;
  throw std::invalid_argument("'" + s + "': expected full | crop");
}

}  // namespace vt
