#include "data_pipeline/resample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace vt {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;

double filter_value(ResampleFilter f, double x) {
  switch (f) {
    case ResampleFilter::Box: return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0;
    case ResampleFilter::Bilinear: x = std::fabs(x); return x < 1.0 ? 1.0 - x : 0.0;
    case ResampleFilter::Bicubic: {
      constexpr double a = -0.5;
      x = std::fabs(x);
      if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
      if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
      return 0.0;
    }
  }
  return 0.0;
}

double filter_support(ResampleFilter f) {
  return f == ResampleFilter::Box ? 0.5 : f == ResampleFilter::Bilinear ? 1.0 : 2.0;
}

// Per output index: first input index, tap count and fixed-point weights
// (Pillow's precompute_coeffs + normalize_coeffs_8bpc).
using Coeffs = PilAxisCoeffs;

Coeffs precompute(int in_size, double in0, double in1, int out_size, ResampleFilter f) {
  const double scale = (in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = filter_support(f) * filterscale;
  Coeffs c;
  c.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  c.bounds.resize(2 * out_size);
  c.k.assign(static_cast<size_t>(out_size) * c.ksize, 0);
  std::vector<double> w(c.ksize);
  for (int xx = 0; xx < out_size; ++xx) {
    const double center = in0 + (xx + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int xmin = static_cast<int>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = static_cast<int>(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    double ww = 0.0;
    for (int x = 0; x < xmax; ++x) {
      w[x] = filter_value(f, (x + xmin - center + 0.5) * ss);
      ww += w[x];
    }
    for (int x = 0; x < xmax; ++x) {
      const double v = ww != 0.0 ? w[x] / ww : w[x];
      c.k[static_cast<size_t>(xx) * c.ksize + x] =
          v < 0 ? static_cast<int>(-0.5 + v * (1 << kPrecisionBits))
                : static_cast<int>(0.5 + v * (1 << kPrecisionBits));
    }
    c.bounds[2 * xx] = xmin;
    c.bounds[2 * xx + 1] = xmax;
  }
  return c;
}

inline uint8_t clip8(int v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// The passes below compute, per output sample and channel, Pillow's
//   clip8((2^21 + sum_t in[first + t] * k[t]) >> 22)
// in 32-bit integers. The scalar loops are the reference; the AVX2 versions
// reorder only exact integer additions, so they give the same bytes
// (tests/data/test_resample_simd.cpp checks it on random sizes and boxes).

void resample_horizontal_scalar(const cv::Mat& in, cv::Mat& out, int y0, const Coeffs& c, int y_begin, int y_end) {
  for (int y = y_begin; y < y_end; ++y) {
    const uint8_t* s = in.ptr<uint8_t>(y + y0);
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int xx = 0; xx < out.cols; ++xx) {
      const int xmin = c.bounds[2 * xx], n = c.bounds[2 * xx + 1];
      const int* k = &c.k[static_cast<size_t>(xx) * c.ksize];
      const uint8_t* p = s + 3 * xmin;
      int s0 = 1 << (kPrecisionBits - 1), s1 = s0, s2 = s0;
      for (int x = 0; x < n; ++x, p += 3) {
        s0 += p[0] * k[x];
        s1 += p[1] * k[x];
        s2 += p[2] * k[x];
      }
      o[3 * xx] = clip8(s0);
      o[3 * xx + 1] = clip8(s1);
      o[3 * xx + 2] = clip8(s2);
    }
  }
}

void resample_vertical_scalar(const cv::Mat& in, cv::Mat& out, const Coeffs& c) {
  const int row = out.cols * 3;
  std::vector<int> acc(row);
  for (int yy = 0; yy < out.rows; ++yy) {
    const int ymin = c.bounds[2 * yy], n = c.bounds[2 * yy + 1];
    const int* k = &c.k[static_cast<size_t>(yy) * c.ksize];
    std::fill(acc.begin(), acc.end(), 1 << (kPrecisionBits - 1));
    for (int y = 0; y < n; ++y) {
      const uint8_t* s = in.ptr<uint8_t>(ymin + y);
      const int ky = k[y];
      for (int i = 0; i < row; ++i) acc[i] += s[i] * ky;
    }
    uint8_t* o = out.ptr<uint8_t>(yy);
    for (int i = 0; i < row; ++i) o[i] = clip8(acc[i]);
  }
}

#if defined(__AVX2__)

struct alignas(32) Vec8 {
  __m256i v;
};

// One row of resample_horizontal_avx2. kPairs > 0: the tap-pair count,
// known at compile time so the tap loop unrolls (3 to 5 pairs: bicubic up
// to a 2x reduction, all of RandomResizedCrop's after DCT scaling); 0:
// `pairs` at run time.
template <int kPairs>
void horizontal_row_avx2(const uint8_t* s, uint8_t* o, const int* start, const Vec8* w, int ow, int pairs) {
  if (kPairs > 0) pairs = kPairs;
  // Two adjacent pixels' bytes (R G B R' G' B') to 16-bit (R R' G G' B B' 0 0).
  const __m256i spread = _mm256_setr_epi8(0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1,  //
                                          0, -1, 3, -1, 1, -1, 4, -1, 2, -1, 5, -1, -1, -1, -1, -1);
  const __m256i round = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  for (int a = 0; a < ow; a += 2) {
    const int b = std::min(a + 1, ow - 1);
    const uint8_t* pa = s + 3 * start[a];
    const uint8_t* pb = s + 3 * start[b];
    __m256i acc_hi = _mm256_setzero_si256(), acc_lo = _mm256_setzero_si256();
    for (int j = 0; j < pairs; ++j, w += 2) {
      const __m256i v = _mm256_shuffle_epi8(
          _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(pa + 6 * j))),
                                  _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + 6 * j)), 1),
          spread);
      acc_hi = _mm256_add_epi32(acc_hi, _mm256_madd_epi16(v, w[0].v));
      acc_lo = _mm256_add_epi32(acc_lo, _mm256_madd_epi16(v, w[1].v));
    }
    __m256i sum = _mm256_add_epi32(_mm256_add_epi32(_mm256_slli_epi32(acc_hi, 11), acc_lo), round);
    sum = _mm256_srai_epi32(sum, kPrecisionBits);
    // Saturating packs are clip8: the shifted sums are far inside int16.
    sum = _mm256_packs_epi32(sum, sum);
    sum = _mm256_packus_epi16(sum, sum);
    const uint32_t ra = static_cast<uint32_t>(_mm256_extract_epi32(sum, 0));
    const uint32_t rb = static_cast<uint32_t>(_mm256_extract_epi32(sum, 4));
    std::memcpy(o + 3 * a, &ra, 3);
    if (b != a) std::memcpy(o + 3 * b, &rb, 3);
  }
}

// Horizontal pass, two output pixels per vector (one per 128-bit lane), two
// taps per step with _mm256_madd_epi16: 16-bit pixels times 16-bit
// weights, summed in pairs into 32 bits. The 22-bit weights do not fit 16
// bits, so each is split as k = kh * 2^11 + kl (kl in [0, 2^11)) and the
// two halves are summed separately: sum(p k) = sum(p kh) * 2^11 + sum(p kl)
// exactly (modulo 2^32, and the true sum fits in 32 bits). Every output
// pixel reads a window of the same even number of taps (the tap loop's
// count never changes, so it is never mispredicted): windows are moved left
// to stay inside the row, and the taps outside an output's own range have
// weight 0. Returns false (nothing written) when a weight does not split
// into 16-bit halves or the row is narrower than the window.
bool resample_horizontal_avx2(const cv::Mat& in, cv::Mat& out, int y0, const Coeffs& c) {
  const int W = in.cols, ow = out.cols;
  const int taps = (c.ksize + 1) & ~1, pairs = taps / 2;
  if (W < taps) return false;
  const int npix2 = (ow + 1) / 2;
  // Per output pixel: window start; per pixel pair and tap pair: the
  // (kh, kh') and (kl, kl') weights of each pixel in its lane's four dwords.
  std::vector<int> start(ow);
  std::vector<Vec8> kw(static_cast<size_t>(npix2) * pairs * 2);
  std::vector<int16_t> hi(static_cast<size_t>(ow) * taps, 0), lo(hi.size(), 0);
  for (int xx = 0; xx < ow; ++xx) {
    const int xmin = c.bounds[2 * xx], n = c.bounds[2 * xx + 1];
    start[xx] = std::min(xmin, W - taps);
    for (int t = 0; t < n; ++t) {
      const int k = c.k[static_cast<size_t>(xx) * c.ksize + t], kh = k >> 11;
      if (kh < INT16_MIN || kh > INT16_MAX) return false;
      const size_t at = static_cast<size_t>(xx) * taps + (xmin - start[xx]) + t;
      hi[at] = static_cast<int16_t>(kh);
      lo[at] = static_cast<int16_t>(k & 0x7FF);
    }
  }
  // A lane's four dwords: one pixel's two 16-bit weights of a tap pair.
  auto lanes = [taps](const std::vector<int16_t>& w, int a, int b, int j) {
    auto pair = [&](int x) {
      const int16_t* p = &w[static_cast<size_t>(x) * taps + 2 * j];
      return static_cast<int>(static_cast<uint16_t>(p[0]) | static_cast<uint32_t>(static_cast<uint16_t>(p[1])) << 16);
    };
    return _mm256_set_m128i(_mm_set1_epi32(pair(b)), _mm_set1_epi32(pair(a)));
  };
  for (int xp = 0; xp < npix2; ++xp) {
    const int a = 2 * xp, b = std::min(a + 1, ow - 1);  // odd width: the last lane repeats the last pixel
    for (int j = 0; j < pairs; ++j) {
      kw[(static_cast<size_t>(xp) * pairs + j) * 2].v = lanes(hi, a, b, j);
      kw[(static_cast<size_t>(xp) * pairs + j) * 2 + 1].v = lanes(lo, a, b, j);
    }
  }
  for (int y = 0; y < out.rows; ++y) {
    const uint8_t* s = in.ptr<uint8_t>(y + y0);
    // The last tap pair's 16-byte load reads up to 10 bytes past the row
    // (weight 0): allowed while they stay inside the allocation.
    if (s + 3 * W + 10 > in.datalimit) {
      resample_horizontal_scalar(in, out, y0, c, y, y + 1);
      continue;
    }
    pairs == 3   ? horizontal_row_avx2<3>(s, out.ptr<uint8_t>(y), start.data(), kw.data(), ow, pairs)
    : pairs == 4 ? horizontal_row_avx2<4>(s, out.ptr<uint8_t>(y), start.data(), kw.data(), ow, pairs)
    : pairs == 5 ? horizontal_row_avx2<5>(s, out.ptr<uint8_t>(y), start.data(), kw.data(), ow, pairs)
                 : horizontal_row_avx2<0>(s, out.ptr<uint8_t>(y), start.data(), kw.data(), ow, pairs);
  }
  return true;
}

// Vertical pass: 32 output samples at a time in four vectors of 32-bit
// sums, kept in registers over the taps.
void resample_vertical_avx2(const cv::Mat& in, cv::Mat& out, const Coeffs& c) {
  const int row = out.cols * 3, row32 = row & ~31;
  const __m256i round = _mm256_set1_epi32(1 << (kPrecisionBits - 1));
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undoes the packs' lane interleave
  for (int yy = 0; yy < out.rows; ++yy) {
    const int ymin = c.bounds[2 * yy], n = c.bounds[2 * yy + 1];
    const int* k = &c.k[static_cast<size_t>(yy) * c.ksize];
    uint8_t* o = out.ptr<uint8_t>(yy);
    for (int i = 0; i < row32; i += 32) {
      __m256i a0 = round, a1 = round, a2 = round, a3 = round;
      for (int y = 0; y < n; ++y) {
        const uint8_t* s = in.ptr<uint8_t>(ymin + y) + i;
        const __m256i ky = _mm256_set1_epi32(k[y]);
        auto tap = [&](int q) {
          return _mm256_mullo_epi32(
              _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + 8 * q))), ky);
        };
        a0 = _mm256_add_epi32(a0, tap(0));
        a1 = _mm256_add_epi32(a1, tap(1));
        a2 = _mm256_add_epi32(a2, tap(2));
        a3 = _mm256_add_epi32(a3, tap(3));
      }
      const __m256i p01 = _mm256_packs_epi32(_mm256_srai_epi32(a0, kPrecisionBits), _mm256_srai_epi32(a1, kPrecisionBits));
      const __m256i p23 = _mm256_packs_epi32(_mm256_srai_epi32(a2, kPrecisionBits), _mm256_srai_epi32(a3, kPrecisionBits));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + i),
                          _mm256_permutevar8x32_epi32(_mm256_packus_epi16(p01, p23), order));
    }
    for (int i = row32; i < row; ++i) {
      int acc = 1 << (kPrecisionBits - 1);
      for (int y = 0; y < n; ++y) acc += in.ptr<uint8_t>(ymin + y)[i] * k[y];
      o[i] = clip8(acc);
    }
  }
}

#endif

void resample_horizontal(const cv::Mat& in, cv::Mat& out, int y0, const Coeffs& c, bool simd) {
#if defined(__AVX2__)
  if (simd && resample_horizontal_avx2(in, out, y0, c)) return;
#endif
  resample_horizontal_scalar(in, out, y0, c, 0, out.rows);
}

void resample_vertical(const cv::Mat& in, cv::Mat& out, const Coeffs& c, bool simd) {
#if defined(__AVX2__)
  if (simd) return resample_vertical_avx2(in, out, c);
#endif
  resample_vertical_scalar(in, out, c);
}

void check_rgb(const cv::Mat& src, const char* op) {
  if (src.type() != CV_8UC3 || src.empty())
    throw std::invalid_argument(std::string(op) + ": expected a non-empty CV_8UC3 image, got type " +
                                std::to_string(src.type()) + " size " + std::to_string(src.cols) + "x" +
                                std::to_string(src.rows));
}

}  // namespace

PilResizePlan plan_resize_pil(int src_w, int src_h, int out_w, int out_h, ResampleFilter filter,
                              std::array<double, 4> box) {
  if (out_w <= 0 || out_h <= 0)
    throw std::invalid_argument("resize_pil: output size " + std::to_string(out_w) + "x" + std::to_string(out_h) +
                                " must be positive");
  if (box[2] <= box[0] || box[3] <= box[1]) box = {0, 0, double(src_w), double(src_h)};
  PilResizePlan p;
  p.need_h = out_w != src_w || box[0] != 0 || box[2] != src_w;
  p.need_v = out_h != src_h || box[1] != 0 || box[3] != src_h;
  p.horiz = precompute(src_w, box[0], box[2], out_w, filter);
  p.vert = precompute(src_h, box[1], box[3], out_h, filter);
  // Pillow 13 (python-pillow/Pillow#9549) runs the vertical pass first when
  // the height shrinks by more than twice as many pixels as the width; the
  // passes round to 8 bits in between, so the order changes the bytes (by a
  // few levels). Pillow <= 12 always ran the horizontal pass first.
  p.vertical_first = src_h - out_h > 0 && src_h - out_h > (src_w - out_w) * 2;
  p.row_first = 0;
  p.row_last = src_h;
  if (!p.vertical_first && p.need_h && p.need_v) {
    // Only input rows the vertical pass reads go through the horizontal pass.
    p.row_first = p.vert.bounds[0];
    p.row_last = p.vert.bounds[2 * out_h - 2] + p.vert.bounds[2 * out_h - 1];
    for (int i = 0; i < out_h; ++i) p.vert.bounds[2 * i] -= p.row_first;
  }
  return p;
}

namespace {

cv::Mat resize_pil_impl(const cv::Mat& src, int out_w, int out_h, ResampleFilter filter, std::array<double, 4> box,
                        bool simd) {
  check_rgb(src, "resize_pil");
  const PilResizePlan p = plan_resize_pil(src.cols, src.rows, out_w, out_h, filter, box);
  if (p.vertical_first) {  // out_h < src.rows: the vertical pass is needed
    cv::Mat tmp(out_h, src.cols, CV_8UC3);
    resample_vertical(src, tmp, p.vert, simd);
    if (!p.need_h) return tmp;
    cv::Mat out(out_h, out_w, CV_8UC3);
    resample_horizontal(tmp, out, 0, p.horiz, simd);
    return out;
  }
  cv::Mat tmp;
  if (p.need_h) {
    tmp.create(p.row_last - p.row_first, out_w, CV_8UC3);
    resample_horizontal(src, tmp, p.row_first, p.horiz, simd);
  } else {
    tmp = src;
  }
  if (!p.need_v) return p.need_h ? tmp : src.clone();
  cv::Mat out(out_h, out_w, CV_8UC3);
  resample_vertical(tmp, out, p.vert, simd);
  return out;
}

}  // namespace

cv::Mat resize_pil(const cv::Mat& src, int out_w, int out_h, ResampleFilter filter, std::array<double, 4> box) {
  return resize_pil_impl(src, out_w, out_h, filter, box, true);
}

cv::Mat resize_pil_scalar(const cv::Mat& src, int out_w, int out_h, ResampleFilter filter,
                          std::array<double, 4> box) {
  return resize_pil_impl(src, out_w, out_h, filter, box, false);
}

namespace {

// Keys' cubic convolution with a = -1, as in Pillow's Geometry.c BICUBIC:
//   p1 = v2, p2 = -v1 + v3, p3 = 2 (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4,
//   result p1 + d (p2 + d (p3 + d p4)), all in double.
#if !defined(__AVX2__)
inline double cubic_conv(double v1, double v2, double v3, double v4, double d) {
  const double p1 = v2, p2 = -v1 + v3, p3 = 2 * (v1 - v2) + v3 - v4, p4 = -v1 + v2 - v3 + v4;
  return p1 + d * (p2 + d * (p3 + d * p4));
}
#else
// The formula on four lanes (the three channels and a spare). Every lane
// performs the operations in the same order (-a + b == b - a
// exactly), and no FMA is used, so each lane is bitwise equal to the scalar.
inline __m256d cubic_conv4(__m256d v1, __m256d v2, __m256d v3, __m256d v4, __m256d d) {
  const __m256d p2 = _mm256_sub_pd(v3, v1);
  const __m256d d12 = _mm256_sub_pd(v1, v2);
  const __m256d p3 = _mm256_sub_pd(_mm256_add_pd(_mm256_add_pd(d12, d12), v3), v4);
  const __m256d p4 = _mm256_add_pd(_mm256_sub_pd(_mm256_sub_pd(v2, v1), v3), v4);
  return _mm256_add_pd(v2, _mm256_mul_pd(d, _mm256_add_pd(p2, _mm256_mul_pd(d, _mm256_add_pd(p3, _mm256_mul_pd(d, p4))))));
}

#endif

}  // namespace

cv::Mat affine_pil(const cv::Mat& src, const std::array<double, 6>& m, AffineFilter filter, const cv::Vec3b& fill) {
  check_rgb(src, "affine_pil");
  const int W = src.cols, H = src.rows;
  cv::Mat out(H, W, CV_8UC3);
  auto clampx = [W](int x) { return x < 0 ? 0 : x >= W ? W - 1 : x; };
  auto clampy = [H](int y) { return y < 0 ? 0 : y >= H ? H - 1 : y; };
#if defined(__AVX2__)
  // Bicubic reads 16 pixels per output pixel: converting the image once to
  // four doubles per pixel (R, G, B, 0) makes each read a single aligned
  // load of a channel vector instead of three byte-to-double conversions.
  std::vector<double> rgbx;
  if (filter == AffineFilter::Bicubic) {
    rgbx.resize(static_cast<size_t>(W) * H * 4);
    for (int y = 0; y < H; ++y) {
      const uint8_t* s = src.ptr<uint8_t>(y);
      double* d = rgbx.data() + static_cast<size_t>(y) * W * 4;
      for (int x = 0; x < W; ++x, s += 3, d += 4) {
        d[0] = s[0];
        d[1] = s[1];
        d[2] = s[2];
        d[3] = 0.0;
      }
    }
  }
#endif
  for (int y = 0; y < H; ++y) {
    uint8_t* o = out.ptr<uint8_t>(y);
    for (int x = 0; x < W; ++x, o += 3) {
      const double xo = x + 0.5, yo = y + 0.5;
      double xin = m[0] * xo + m[1] * yo + m[2];
      double yin = m[3] * xo + m[4] * yo + m[5];
      if (xin < 0.0 || xin >= W || yin < 0.0 || yin >= H) {
        o[0] = fill[0];
        o[1] = fill[1];
        o[2] = fill[2];
        continue;
      }
      if (filter == AffineFilter::Nearest) {
        const uint8_t* p = src.ptr<uint8_t>(static_cast<int>(yin)) + 3 * static_cast<int>(xin);
        o[0] = p[0];
        o[1] = p[1];
        o[2] = p[2];
        continue;
      }
      xin -= 0.5;
      yin -= 0.5;
      const int xi = static_cast<int>(std::floor(xin)), yi = static_cast<int>(std::floor(yin));
      const double dx = xin - xi, dy = yin - yi;
      if (filter == AffineFilter::Bilinear) {
        const uint8_t* r0 = src.ptr<uint8_t>(clampy(yi));
        const uint8_t* r1 = src.ptr<uint8_t>(clampy(yi + 1));
        const int x0 = 3 * clampx(xi), x1 = 3 * clampx(xi + 1);
        for (int c = 0; c < 3; ++c) {
          const double v1 = r0[x0 + c] + dx * (r0[x1 + c] - r0[x0 + c]);
          const double v2 = r1[x0 + c] + dx * (r1[x1 + c] - r1[x0 + c]);
          const double v = v1 + dy * (v2 - v1);
          o[c] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : static_cast<int>(v + 0.5));
        }
        continue;
      }
#if defined(__AVX2__)
      const int x0 = clampx(xi - 1), x1 = clampx(xi), x2 = clampx(xi + 1), x3 = clampx(xi + 2);
      const __m256d vdx = _mm256_set1_pd(dx);
      __m256d v[4];
      for (int j = 0; j < 4; ++j) {
        const double* r = rgbx.data() + static_cast<size_t>(clampy(yi - 1 + j)) * W * 4;
        v[j] = cubic_conv4(_mm256_loadu_pd(r + 4 * x0), _mm256_loadu_pd(r + 4 * x1), _mm256_loadu_pd(r + 4 * x2),
                           _mm256_loadu_pd(r + 4 * x3), vdx);
      }
      const __m256d val = cubic_conv4(v[0], v[1], v[2], v[3], _mm256_set1_pd(dy));
      // Pillow stores the cubic result by truncation, not rounding
      // (checked against Pillow outputs in test_pil_parity); the values stay
      // far inside int32, where cvtt equals static_cast<int>.
      alignas(16) int32_t vi[4];
      _mm_store_si128(reinterpret_cast<__m128i*>(vi), _mm256_cvttpd_epi32(val));
      for (int c = 0; c < 3; ++c) o[c] = static_cast<uint8_t>(vi[c] < 0 ? 0 : vi[c] > 255 ? 255 : vi[c]);
#else
      int xs[4], ys[4];
      for (int i = 0; i < 4; ++i) {
        xs[i] = 3 * clampx(xi - 1 + i);
        ys[i] = clampy(yi - 1 + i);
      }
      for (int c = 0; c < 3; ++c) {
        double v[4];
        for (int j = 0; j < 4; ++j) {
          const uint8_t* r = src.ptr<uint8_t>(ys[j]);
          v[j] = cubic_conv(r[xs[0] + c], r[xs[1] + c], r[xs[2] + c], r[xs[3] + c], dx);
        }
        const int vi = static_cast<int>(cubic_conv(v[0], v[1], v[2], v[3], dy));
        o[c] = static_cast<uint8_t>(vi < 0 ? 0 : vi > 255 ? 255 : vi);
      }
#endif
    }
  }
  return out;
}

}  // namespace vt
