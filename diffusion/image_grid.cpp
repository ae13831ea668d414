#include "diffusion/image_grid.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <opencv2/imgcodecs.hpp>
#include <stdexcept>
#include <vector>

#include "core/atomic_file.h"

namespace vt {

Tensor to_uint8_nhwc(const Tensor& x) {
  if (!x.defined() || x.dim() != 4 || x.dtype() != DType::F32)
    throw std::invalid_argument("to_uint8_nhwc: x must be F32 [N, C, H, W], got " +
                                (x.defined() ? x.str() : std::string("undefined")));
  const Tensor c = x.contiguous().to(Device::cpu());
  const int64_t N = c.size(0), C = c.size(1), H = c.size(2), W = c.size(3);
  Tensor out = Tensor::empty({N, H, W, C}, DType::U8);
  const float* s = c.f32();
  uint8_t* d = out.u8();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t ch = 0; ch < C; ++ch)
      for (int64_t i = 0; i < H * W; ++i) {
        const float v = std::min(255.0f, std::max(0.0f, 127.5f * s[(n * C + ch) * H * W + i] + 128.0f));
        d[(n * H * W + i) * C + ch] = static_cast<uint8_t>(v);  // truncation, as .to(torch.uint8)
      }
  return out;
}

void save_png_grid(const std::string& path, const Tensor& images, int nrow, int padding) {
  if (!images.defined() || images.dim() != 4 || images.dtype() != DType::U8 || !images.is_contiguous())
    throw std::invalid_argument("save_png_grid: images must be contiguous U8 [N, H, W, C], got " +
                                (images.defined() ? images.str() : std::string("undefined")));
  const int N = static_cast<int>(images.size(0)), H = static_cast<int>(images.size(1)),
            W = static_cast<int>(images.size(2)), C = static_cast<int>(images.size(3));
  if (N == 0) throw std::invalid_argument("save_png_grid: no images for " + path);
  if (nrow <= 0) nrow = static_cast<int>(std::ceil(std::sqrt(static_cast<double>(N))));
  const int cols = std::min(nrow, N), rows = (N + nrow - 1) / nrow;
  const int gh = rows * (H + padding) + padding, gw = cols * (W + padding) + padding;
  cv::Mat grid(gh, gw, CV_8UC3, cv::Scalar(0, 0, 0));
  const uint8_t* src = images.u8();
  for (int n = 0; n < N; ++n) {
    const int top = padding + (n / nrow) * (H + padding), left = padding + (n % nrow) * (W + padding);
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        const uint8_t* p = src + ((static_cast<int64_t>(n) * H + y) * W + x) * C;
        cv::Vec3b& o = grid.at<cv::Vec3b>(top + y, left + x);
        const uint8_t r = p[0], g = C >= 3 ? p[1] : p[0], b = C >= 3 ? p[2] : p[0];
        o = cv::Vec3b(b, g, r);  // OpenCV writes BGR
      }
  }
  std::vector<uchar> png;
  if (!cv::imencode(".png", grid, png)) throw std::runtime_error("save_png_grid: cannot encode PNG for " + path);
  const auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  write_file_atomic(path, png.data(), png.size());
}

}  // namespace vt
