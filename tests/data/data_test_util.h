// Helpers shared by the data-pipeline tests: temporary folders, synthetic
// images encoded at test time (no image files live in the repository), and
// fixture loading.
#pragma once
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <turbojpeg.h>

namespace vt::testutil {

inline std::filesystem::path make_temp_dir(const std::string& tag) {
  std::random_device rd;
  auto p = std::filesystem::temp_directory_path() /
           ("vt_data_" + tag + "_" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(p);
  return p;
}

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& tag) : path(make_temp_dir(tag)) {}
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline void write_bytes(const std::filesystem::path& p, const std::vector<uint8_t>& b) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// Encodes packed pixels (pf = TJPF_RGB, TJPF_GRAY or TJPF_CMYK) as JPEG.
inline std::vector<uint8_t> encode_jpeg(const uint8_t* px, int w, int h, int pf, int quality = 95,
                                        int subsamp = TJSAMP_444) {
  tjhandle t = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  const int ps = tjPixelSize[pf];
  if (pf == TJPF_GRAY) subsamp = TJSAMP_GRAY;
  if (tjCompress2(t, px, w, w * ps, h, pf, &buf, &size, subsamp, quality, 0) != 0) {
    tjDestroy(t);
    throw std::runtime_error(std::string("encode_jpeg: ") + tjGetErrorStr2(t));
  }
  std::vector<uint8_t> out(buf, buf + size);
  tjFree(buf);
  tjDestroy(t);
  return out;
}

// A smooth RGB test image with some texture, deterministic in (w, h, seed).
inline cv::Mat synthetic_rgb(int w, int h, int seed) {
  cv::Mat m(h, w, CV_8UC3);
  std::mt19937 g(static_cast<uint32_t>(seed));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      auto* p = m.ptr<uint8_t>(y) + 3 * x;
      p[0] = static_cast<uint8_t>((x * 255) / std::max(1, w - 1));
      p[1] = static_cast<uint8_t>((y * 255) / std::max(1, h - 1));
      p[2] = static_cast<uint8_t>((seed * 37 + (x ^ y) * 5 + static_cast<int>(g() % 16)) & 255);
    }
  return m;
}

inline std::vector<uint8_t> encode_rgb_jpeg(const cv::Mat& rgb, int quality = 95) {
  cv::Mat c = rgb.isContinuous() ? rgb : rgb.clone();
  return encode_jpeg(c.data, c.cols, c.rows, TJPF_RGB, quality);
}

inline nlohmann::json load_fixture(const std::string& name) {
  std::ifstream f(std::string(VT_FIXTURES_DIR) + "/data/" + name);
  if (!f) throw std::runtime_error("missing fixture " + name + " (run tools/data_fixtures.py)");
  return nlohmann::json::parse(f);
}

inline cv::Mat mat_from_flat(const std::vector<int>& v, int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  for (size_t i = 0; i < v.size(); ++i) m.data[i] = static_cast<uint8_t>(v[i]);
  return m;
}

inline int max_abs_diff(const cv::Mat& a, const cv::Mat& b) {
  int d = 0;
  for (int y = 0; y < a.rows; ++y)
    for (int x = 0; x < a.cols * a.channels(); ++x)
      d = std::max(d, std::abs(int(a.ptr<uint8_t>(y)[x]) - int(b.ptr<uint8_t>(y)[x])));
  return d;
}

}  // namespace vt::testutil
