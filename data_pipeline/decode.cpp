#include "data_pipeline/decode.h"
#include "data_pipeline/decode_other.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>

#include <turbojpeg.h>

#include "data_pipeline/to_rgb.h"

namespace vt {

namespace {

// One TurboJPEG decompressor per thread: handles are not thread-safe and
// creating one per image costs more than a small decode.
struct TjHandle {
  tjhandle h = tjInitDecompress();
  ~TjHandle() {
    if (h) tjDestroy(h);
  }
};
thread_local TjHandle t_decompressor;
tjhandle thread_decompressor() {
  if (!t_decompressor.h) throw std::runtime_error("decode_image: tjInitDecompress failed");
  return t_decompressor.h;
}
// libjpeg-turbo 2.x's tjDecompressHeader3 returns from a libjpeg error
// without aborting the decompressor, which stays mid-header: the next image
// on this thread would then fail with the same error. A failed call
// therefore replaces the thread's handle.
void reset_thread_decompressor() {
  if (t_decompressor.h) tjDestroy(t_decompressor.h);
  t_decompressor.h = tjInitDecompress();
}
// The error text of a failed call on `h`, after which the handle is replaced.
std::string take_tj_error(tjhandle h) {
  std::string msg = tjGetErrorStr2(h);
  reset_thread_decompressor();
  return msg;
}

// Scans the marker segments before the first SOS for an Adobe APP14 marker
// (its presence means CMYK values are stored inverted).
bool has_adobe_marker(const uint8_t* d, size_t n) {
  size_t i = 2;
  while (i + 4 <= n) {
    if (d[i] != 0xFF) return false;
    const uint8_t m = d[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0xDA || m == 0xD9) return false;  // SOS / EOI: no more headers
    const size_t len = (static_cast<size_t>(d[i + 2]) << 8) | d[i + 3];
    if (m == 0xEE && len >= 7 && i + 4 + 5 <= n && std::memcmp(d + i + 4, "Adobe", 5) == 0) return true;
    i += 2 + len;
  }
  return false;
}

DecodedImage decode_jpeg(const uint8_t* data, size_t size, const std::string& name, double min_scale) {
  tjhandle h = thread_decompressor();
  int w = 0, hgt = 0, subsamp = 0, colorspace = 0;
  if (tjDecompressHeader3(h, data, static_cast<unsigned long>(size), &w, &hgt, &subsamp, &colorspace) != 0)
    throw CorruptImage("cannot decode '" + name + "': bad JPEG header (" + take_tj_error(h) + ")");
  check_pixel_limit(w, hgt, name);

  // libjpeg reports a missing EOI as a warning and fills the rest; appending
  // the marker keeps files that lack only EOI exact, and lets a real
  // truncation show up as a "premature end of data segment" warning below.
  const bool appended_eoi = size < 2 || data[size - 2] != 0xFF || data[size - 1] != 0xD9;
  std::vector<uint8_t> patched;
  if (appended_eoi) {
    patched.assign(data, data + size);
    patched.push_back(0xFF);
    patched.push_back(0xD9);
    data = patched.data();
    size = patched.size();
  }

  int num = 1, den = 1;
  choose_dct_scale(min_scale, &num, &den);
  const tjscalingfactor sf{num, den};
  const int sw = TJSCALED(w, sf), sh = TJSCALED(hgt, sf);

  const bool cmyk = colorspace == TJCS_CMYK || colorspace == TJCS_YCCK;
  DecodedImage out;
  out.full_width = w;
  out.full_height = hgt;
  cv::Mat buf(sh, sw, cmyk ? CV_8UC4 : CV_8UC3);
  const int rc = tjDecompress2(h, data, static_cast<unsigned long>(size), buf.data, sw,
                               static_cast<int>(buf.step[0]), sh, cmyk ? TJPF_CMYK : TJPF_RGB, 0);
  if (rc != 0) {
    const bool warning = tjGetErrorCode(h) == TJERR_WARNING;
    const std::string msg = take_tj_error(h);
    std::string lower = msg;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    // Recoverable libjpeg warnings (e.g. extraneous bytes before a marker)
    // are accepted, as PIL does; running out of data is not.
    if (!warning || (appended_eoi && lower.find("premature end") != std::string::npos))
      throw CorruptImage("cannot decode '" + name + "': " + (appended_eoi ? "truncated JPEG: " : "") + msg);
  }
  out.rgb = cmyk ? cmyk_to_rgb(buf, has_adobe_marker(data, size)) : buf;
  return out;
}

}  // namespace

// Header sizes are up to 2^32 - 1 each (PNG), so the product may not fit.
void check_pixel_limit(int64_t w, int64_t h, const std::string& name) {
  int64_t pixels = 0;
  const bool overflow = __builtin_mul_overflow(w, h, &pixels);
  if (overflow || pixels > kMaxImagePixels)
    throw CorruptImage("cannot decode '" + name + "': " + std::to_string(w) + " x " + std::to_string(h) + " = " +
                       (overflow ? std::string("too many") : std::to_string(pixels)) +
                       " pixels, more than the limit of " + std::to_string(kMaxImagePixels) +
                       " (Pillow's decompression-bomb limit)");
}

void choose_dct_scale(double min_scale, int* num, int* den) {
  *num = 1;
  *den = 1;
  if (!(min_scale < 1.0)) return;
  int n = 0;
  tjscalingfactor* f = tjGetScalingFactors(&n);
  double best = 1.0;
  for (int i = 0; i < n; ++i) {
    const double s = static_cast<double>(f[i].num) / f[i].denom;
    if (s <= 1.0 && s >= min_scale && s < best) {
      best = s;
      *num = f[i].num;
      *den = f[i].denom;
    }
  }
}

ImageSize probe_image(const uint8_t* data, size_t size, const std::string& name) {
  if (sniff_format(data, size) == ImageFormat::Jpeg) {
    int w = 0, h = 0, ss = 0, cs = 0;
    tjhandle hd = thread_decompressor();
    if (tjDecompressHeader3(hd, data, static_cast<unsigned long>(size), &w, &h, &ss, &cs) != 0)
      throw CorruptImage("cannot decode '" + name + "': bad JPEG header (" + take_tj_error(hd) + ")");
    check_pixel_limit(w, h, name);
    return {w, h};
  }
  const DecodedImage d = decode_image(data, size, name);
  return {d.full_width, d.full_height};
}

DecodedImage decode_image(const uint8_t* data, size_t size, const std::string& name, double min_scale) {
  if (size == 0) throw CorruptImage("cannot decode '" + name + "': empty file");
  const ImageFormat format = sniff_format(data, size);
  if (format == ImageFormat::Jpeg) return decode_jpeg(data, size, name, min_scale);
  if (format == ImageFormat::Unknown)
    throw CorruptImage("cannot decode '" + name +
                       "': not a JPEG, PNG, BMP, PBM/PGM/PPM, TIFF or WebP file (by its first bytes)");
  ImageDims dims;
  if (!header_size(data, size, format, &dims))
    throw CorruptImage("cannot decode '" + name + "': truncated or malformed " + image_format_name(format) + " header");
  check_pixel_limit(dims.width, dims.height, name);
  if (size > static_cast<size_t>(std::numeric_limits<int>::max()))
    throw CorruptImage("cannot decode '" + name + "': " + std::to_string(size) + " bytes, more than cv::imdecode takes");
  const cv::Mat m = decode_other_format(data, size, name, format);
  DecodedImage out;
  out.rgb = to_rgb8(m, name);
  out.full_width = out.rgb.cols;
  out.full_height = out.rgb.rows;
  return out;
}

std::vector<uint8_t> read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw std::runtime_error("cannot open '" + path + "'");
  const std::streamsize n = f.tellg();
  f.seekg(0);
  std::vector<uint8_t> buf(static_cast<size_t>(std::max<std::streamsize>(n, 0)));
  if (n > 0 && !f.read(reinterpret_cast<char*>(buf.data()), n)) throw std::runtime_error("cannot read '" + path + "'");
  return buf;
}

CorruptImage with_skip_hint(const CorruptImage& e) {
  return CorruptImage(std::string(e.what()) +
                      " (data.on_corrupt=skip leaves unreadable images out, naming each in the log)");
}

}  // namespace vt
