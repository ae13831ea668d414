#include "data_pipeline/crop_decode.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "data_pipeline/decode.h"
#include "data_pipeline/jpeg_region.h"
#include "data_pipeline/resample.h"

namespace vt {

namespace {

// The box in scaled pixels (fractional) and the integer pixels covering it.
struct ScaledBox {
  double x0, y0, x1, y1;
  int ix0, iy0, ix1, iy1;
};

ScaledBox scale_box(const CropBox& b, int full_w, int full_h, int scaled_w, int scaled_h) {
  ScaledBox s{};
  if (scaled_w == full_w && scaled_h == full_h) {
    s.x0 = s.ix0 = b.left;
    s.y0 = s.iy0 = b.top;
    s.x1 = s.ix1 = b.left + b.width;
    s.y1 = s.iy1 = b.top + b.height;
    return s;
  }
  const double fx = static_cast<double>(scaled_w) / full_w, fy = static_cast<double>(scaled_h) / full_h;
  s.x0 = b.left * fx;
  s.x1 = std::min<double>((b.left + b.width) * fx, scaled_w);
  s.y0 = b.top * fy;
  s.y1 = std::min<double>((b.top + b.height) * fy, scaled_h);
  s.ix0 = static_cast<int>(std::floor(s.x0));
  s.iy0 = static_cast<int>(std::floor(s.y0));
  s.ix1 = std::min(scaled_w, static_cast<int>(std::ceil(s.x1)));
  s.iy1 = std::min(scaled_h, static_cast<int>(std::ceil(s.y1)));
  return s;
}

}  // namespace

double rrc_dct_scale(bool dct, double region_w, double region_h, int out_w, int out_h) {
  const double need = std::max(out_w / region_w, out_h / region_h);
  double scale = 1.0;
  while (dct && scale > 0.125 && scale * 0.5 >= need) scale *= 0.5;
  return scale;
}

cv::Mat resize_scaled_box(const cv::Mat& img, int ox, int oy, int full_w, int full_h, int scaled_w, int scaled_h,
                          const CropBox& b, int out) {
  const ScaledBox s = scale_box(b, full_w, full_h, scaled_w, scaled_h);
  if (s.ix0 < ox || s.iy0 < oy || s.ix1 > ox + img.cols || s.iy1 > oy + img.rows)
    throw std::invalid_argument("resize_scaled_box: the decoded rectangle does not cover the crop");
  const cv::Mat region = img(cv::Rect(s.ix0 - ox, s.iy0 - oy, s.ix1 - s.ix0, s.iy1 - s.iy0));
  if (scaled_w == full_w && scaled_h == full_h) return resize_pil(region, out, out, ResampleFilter::Bicubic);
  return resize_pil(region, out, out, ResampleFilter::Bicubic,
                    {s.x0 - s.ix0, s.y0 - s.iy0, s.x1 - s.ix0, s.y1 - s.iy0});
}

bool decode_crop_resize(const uint8_t* bytes, size_t n, const std::string& name, bool dct, int full_w, int full_h,
                        const CropBox& b, int out, cv::Mat* img) {
  const double scale = rrc_dct_scale(dct, b.width, b.height, out, out);
  const int den = static_cast<int>(std::lround(1.0 / scale));  // 1, 2, 4 or 8
  // TJSCALED: ceil(full * 1 / den), as decode_image's scaled size.
  const int sw = (full_w + den - 1) / den, sh = (full_h + den - 1) / den;
  const ScaledBox s = scale_box(b, full_w, full_h, sw, sh);
  JpegRegion r;
  if (!decode_jpeg_region(bytes, n, name, 1, den, s.ix0, s.iy0, s.ix1, s.iy1, &r)) return false;
  if (r.full_width != full_w || r.full_height != full_h || r.scaled_width != sw || r.scaled_height != sh)
    throw CorruptImage("cannot decode '" + name + "': JPEG header read twice gave different sizes");
  *img = resize_scaled_box(r.rgb, r.x, r.y, full_w, full_h, sw, sh, b, out);
  return true;
}

}  // namespace vt
