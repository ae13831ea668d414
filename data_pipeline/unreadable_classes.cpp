#include "data_pipeline/unreadable_classes.h"

#include <exception>

#include "data_pipeline/decode.h"

namespace vt {

std::vector<std::string> unreadable_classes(const ImageFolder& folder) {
  const auto& samples = folder.samples();  // listed class by class
  std::vector<std::string> out;
  size_t i = 0;
  for (int c = 0; c < folder.num_classes(); ++c) {
    bool readable = false;
    for (; i < samples.size() && samples[i].label == c; ++i) {
      if (readable) continue;  // skip to the next class
      try {
        const std::vector<uint8_t> bytes = read_file_bytes(samples[i].path);
        decode_image(bytes.data(), bytes.size(), samples[i].path, 1.0 / 8);
        readable = true;
      } catch (const std::exception&) {
        // unreadable or undecodable: try the class's next image
      }
    }
    if (!readable) out.push_back(folder.classes()[static_cast<size_t>(c)]);
  }
  return out;
}

}  // namespace vt
