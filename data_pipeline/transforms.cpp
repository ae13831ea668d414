#include "data_pipeline/transforms.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "data_pipeline/resample.h"

namespace vt {

double round_half_even(double x) { return std::nearbyint(x); }  // default FE_TONEAREST

std::optional<std::array<int, 2>> rrc_try(int W, int H, double u_area, double u_ratio, const RrcParams& p) {
  const double area = static_cast<double>(W) * H;
  const double target = area * (p.scale_lo + (p.scale_hi - p.scale_lo) * u_area);
  const double lr0 = std::log(p.ratio_lo), lr1 = std::log(p.ratio_hi);
  const double aspect = std::exp(lr0 + (lr1 - lr0) * u_ratio);
  const int w = static_cast<int>(round_half_even(std::sqrt(target * aspect)));
  const int h = static_cast<int>(round_half_even(std::sqrt(target / aspect)));
  if (w > 0 && w <= W && h > 0 && h <= H) return std::array<int, 2>{w, h};
  return std::nullopt;
}

CropBox rrc_fallback(int W, int H, const RrcParams& p) {
  const double in_ratio = static_cast<double>(W) / H;
  int w = W, h = H;
  if (in_ratio < p.ratio_lo) {
    h = static_cast<int>(round_half_even(w / p.ratio_lo));
  } else if (in_ratio > p.ratio_hi) {
    w = static_cast<int>(round_half_even(h * p.ratio_hi));
  }
  return {(H - h) / 2, (W - w) / 2, h, w};
}

CropBox rrc_box(int W, int H, Philox& rng, const RrcParams& p) {
  for (int t = 0; t < 10; ++t) {
    const double ua = rng.uniform_double(), ur = rng.uniform_double();
    if (auto wh = rrc_try(W, H, ua, ur, p)) {
      const int w = (*wh)[0], h = (*wh)[1];
      const int top = static_cast<int>(rng.integer(0, H - h));
      const int left = static_cast<int>(rng.integer(0, W - w));
      return {top, left, h, w};
    }
  }
  return rrc_fallback(W, H, p);
}

void hflip_inplace(cv::Mat& img) {
  for (int y = 0; y < img.rows; ++y) {
    uint8_t* r = img.ptr<uint8_t>(y);
    for (int a = 0, b = img.cols - 1; a < b; ++a, --b) {
      for (int c = 0; c < 3; ++c) std::swap(r[3 * a + c], r[3 * b + c]);
    }
  }
}

void to_chw_normalized(const cv::Mat& img, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                       float* out) {
  if (img.type() != CV_8UC3) throw std::invalid_argument("to_chw_normalized: expected CV_8UC3 image");
  const int H = img.rows, W = img.cols;
  const size_t plane = static_cast<size_t>(H) * W;
  // (v/255 - m)/s evaluated as v*a + b with float constants: the same
  // rounding for every pixel, whatever the thread.
  float a[3], b[3];
  for (int c = 0; c < 3; ++c) {
    a[c] = 1.0f / (255.0f * std[c]);
    b[c] = -mean[c] / std[c];
  }
  for (int y = 0; y < H; ++y) {
    const uint8_t* r = img.ptr<uint8_t>(y);
    float* o0 = out + static_cast<size_t>(y) * W;
    float* o1 = o0 + plane;
    float* o2 = o1 + plane;
    for (int x = 0; x < W; ++x) {
      o0[x] = r[3 * x] * a[0] + b[0];
      o1[x] = r[3 * x + 1] * a[1] + b[1];
      o2[x] = r[3 * x + 2] * a[2] + b[2];
    }
  }
}

CropBox random_erasing_box(int H, int W, Philox& rng, const ErasingParams& p) {
  if (rng.uniform_double() >= p.probability) return {};
  const double area = static_cast<double>(H) * W;
  const double la0 = std::log(p.min_aspect), la1 = std::log(1.0 / p.min_aspect);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = rng.uniform(p.min_area, p.max_area) * area;
    const double aspect = std::exp(rng.uniform(la0, la1));
    const int h = static_cast<int>(round_half_even(std::sqrt(target * aspect)));
    const int w = static_cast<int>(round_half_even(std::sqrt(target / aspect)));
    if (w < W && h < H) {
      const int top = static_cast<int>(rng.integer(0, H - h));
      const int left = static_cast<int>(rng.integer(0, W - w));
      return {top, left, h, w};
    }
  }
  return {};
}

void random_erasing_fill(float* chw, int C, int H, int W, const CropBox& box, Philox& rng) {
  for (int c = 0; c < C; ++c)
    for (int y = box.top; y < box.top + box.height; ++y) {
      float* row = chw + (static_cast<size_t>(c) * H + y) * W;
      for (int x = box.left; x < box.left + box.width; ++x) row[x] = static_cast<float>(rng.normal());
    }
}

CropBox random_erasing(float* chw, int C, int H, int W, Philox& rng, const ErasingParams& p) {
  const CropBox box = random_erasing_box(H, W, rng, p);
  random_erasing_fill(chw, C, H, W, box, rng);
  return box;
}

EvalGeometry eval_geometry(int W, int H, int resize, int crop) {
  EvalGeometry g;
  if (W <= H) {
    g.resized_w = resize;
    g.resized_h = static_cast<int>(static_cast<int64_t>(resize) * H / W);
  } else {
    g.resized_h = resize;
    g.resized_w = static_cast<int>(static_cast<int64_t>(resize) * W / H);
  }
  g.crop.height = crop;
  g.crop.width = crop;
  g.crop.top = static_cast<int>(round_half_even((g.resized_h - crop) / 2.0));
  g.crop.left = static_cast<int>(round_half_even((g.resized_w - crop) / 2.0));
  return g;
}

cv::Mat adm_center_crop(const cv::Mat& img, int S) {
  cv::Mat cur = img;
  while (std::min(cur.cols, cur.rows) >= 2 * S)
    cur = resize_pil(cur, cur.cols / 2, cur.rows / 2, ResampleFilter::Box);
  const double scale = static_cast<double>(S) / std::min(cur.cols, cur.rows);
  const int nw = static_cast<int>(round_half_even(cur.cols * scale));
  const int nh = static_cast<int>(round_half_even(cur.rows * scale));
  cur = resize_pil(cur, nw, nh, ResampleFilter::Bicubic);
  const int top = (cur.rows - S) / 2, left = (cur.cols - S) / 2;
  return cur(cv::Rect(left, top, S, S)).clone();
}

}  // namespace vt
