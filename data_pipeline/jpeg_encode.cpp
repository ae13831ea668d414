#include "data_pipeline/jpeg_encode.h"

#include <turbojpeg.h>

#include <memory>
#include <stdexcept>

namespace vt {

namespace {

// One compressor per thread: a tjhandle must not be shared between threads.
struct ThreadCompressor {
  tjhandle h = tjInitCompress();
  ~ThreadCompressor() {
    if (h) tjDestroy(h);
  }
};

}  // namespace

std::vector<uint8_t> encode_jpeg_rgb(const uint8_t* rgb, int width, int height, int quality, const std::string& name) {
  if (width <= 0 || height <= 0 || quality < 1 || quality > 100)
    throw std::invalid_argument("encode_jpeg_rgb: '" + name + "': size " + std::to_string(width) + "x" +
                                std::to_string(height) + " or quality " + std::to_string(quality) + " out of range");
  thread_local ThreadCompressor tc;
  if (!tc.h) throw std::runtime_error("encode_jpeg_rgb: cannot start the JPEG encoder for '" + name + "'");
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int rc = tjCompress2(tc.h, rgb, width, width * 3, height, TJPF_RGB, &buf, &size, TJSAMP_420, quality, 0);
  std::unique_ptr<unsigned char, void (*)(unsigned char*)> keep(buf, [](unsigned char* p) { tjFree(p); });
  if (rc != 0) throw std::runtime_error("JPEG encoding of '" + name + "' failed: " + tjGetErrorStr2(tc.h));
  return std::vector<uint8_t>(buf, buf + size);
}

}  // namespace vt
