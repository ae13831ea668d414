// resize_pil's SIMD passes (AVX2 builds, data_pipeline/resample.cpp) against
// its plain C++ passes (resize_pil_scalar), bit for bit, on random images,
// sizes, filters and boxes: odd and tiny widths (narrower than the tap
// window: the scalar fallback), views inside a larger image and views
// ending at its last byte (the rows whose over-reading loads would leave
// the allocation take the scalar path), heavy downscales (wide windows)
// and upscales, and noise that drives the sums past 0 and 255 (clip8).
#include <gtest/gtest.h>

#include <random>

#include "data_pipeline/resample.h"
#include "data_test_util.h"

namespace vt {
namespace {

cv::Mat random_image(std::mt19937& g, int w, int h) {
  cv::Mat m(h, w, CV_8UC3);
  std::uniform_int_distribution<int> byte(0, 255), kind(0, 2);
  const int k = kind(g);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < 3 * w; ++x)  // noise, or smooth ramps with a little noise
      m.ptr<uint8_t>(y)[x] = static_cast<uint8_t>(k == 0 ? byte(g) : (x * 7 + y * 3 + byte(g) % 16) & 255);
  return m;
}

void expect_same(const cv::Mat& src, int ow, int oh, ResampleFilter f, std::array<double, 4> box, const char* what) {
  const cv::Mat simd = resize_pil(src, ow, oh, f, box), ref = resize_pil_scalar(src, ow, oh, f, box);
  ASSERT_EQ(simd.size(), ref.size());
  EXPECT_EQ(testutil::max_abs_diff(simd, ref), 0)
      << what << ": " << src.cols << "x" << src.rows << " -> " << ow << "x" << oh << " filter " << int(f) << " box "
      << box[0] << "," << box[1] << "," << box[2] << "," << box[3];
}

TEST(ResampleSimd, MatchesScalarOnRandomSizesAndBoxes) {
  std::mt19937 g(1234);
  std::uniform_int_distribution<int> side(1, 160), filt(0, 2), coin(0, 3);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  for (int i = 0; i < 400; ++i) {
    const int w = side(g), h = side(g);
    // A view into a larger image: at its top-left (bytes follow every row)
    // or at its bottom-right (the last row ends at the allocation's end).
    const int pad = coin(g) == 0 ? 0 : 5;
    const cv::Mat big = random_image(g, w + pad, h + pad);
    const bool at_end = coin(g) < 2;
    const cv::Mat src = big(cv::Rect(at_end ? pad : 0, at_end ? pad : 0, w, h));
    const int ow = coin(g) == 0 ? side(g) * 2 : side(g), oh = coin(g) == 0 ? side(g) * 2 : side(g);
    std::array<double, 4> box{0, 0, 0, 0};
    if (coin(g) < 2) {
      const double x0 = u(g) * w * 0.5, y0 = u(g) * h * 0.5;
      box = {x0, y0, x0 + (w - x0) * (0.3 + 0.7 * u(g)), y0 + (h - y0) * (0.3 + 0.7 * u(g))};
    }
    expect_same(src, ow, oh, static_cast<ResampleFilter>(filt(g)), box, "random");
  }
}

TEST(ResampleSimd, MatchesScalarOnEdgeCases) {
  std::mt19937 g(99);
  // Tiny and odd widths (1..9 columns: windows wider than the row), one row.
  for (int w = 1; w <= 9; ++w)
    for (int ow : {1, 2, 3, 7, 224, 225})
      for (ResampleFilter f : {ResampleFilter::Box, ResampleFilter::Bilinear, ResampleFilter::Bicubic}) {
        expect_same(random_image(g, w, 5), ow, 3, f, {0, 0, 0, 0}, "tiny");
        expect_same(random_image(g, w, 1), ow, 1, f, {0, 0, 0, 0}, "one row");
      }
  // Heavy downscales (windows of tens of taps), both pass orders, and the
  // RandomResizedCrop shapes (a fractional box in a DCT-scaled region).
  const cv::Mat big = random_image(g, 1001, 777);
  for (ResampleFilter f : {ResampleFilter::Box, ResampleFilter::Bilinear, ResampleFilter::Bicubic}) {
    expect_same(big, 31, 17, f, {0, 0, 0, 0}, "downscale");
    expect_same(big, 3, 700, f, {0, 0, 0, 0}, "horizontal only");
    expect_same(big, 1001, 99, f, {0, 0, 0, 0}, "vertical only");
    expect_same(big, 224, 224, f, {10.25, 3.5, 400.75, 333.125}, "rrc box");
    expect_same(big(cv::Rect(700, 500, 301, 277)), 224, 224, f, {0.5, 0.25, 300.5, 276.75}, "view at the end");
  }
}

}  // namespace
}  // namespace vt
