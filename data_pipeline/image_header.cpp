#include "data_pipeline/image_header.h"

#include <cstring>

namespace vt {

namespace {

bool starts_with(const uint8_t* d, size_t n, const char* magic, size_t len) {
  return n >= len && std::memcmp(d, magic, len) == 0;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
uint32_t le32(const uint8_t* p) {
  return (uint32_t{p[3]} << 24) | (uint32_t{p[2]} << 16) | (uint32_t{p[1]} << 8) | p[0];
}
uint16_t le16(const uint8_t* p) { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t le24(const uint8_t* p) { return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16); }

bool set_dims(int64_t w, int64_t h, ImageDims* out) {
  if (w <= 0 || h <= 0) return false;
  out->width = w;
  out->height = h;
  return true;
}

// PNG: the IHDR chunk must come first (PNG spec 5.6).
bool png_dims(const uint8_t* d, size_t n, ImageDims* out) {
  if (n < 24 || std::memcmp(d + 12, "IHDR", 4) != 0) return false;
  return set_dims(be32(d + 16), be32(d + 20), out);
}

// BMP: BITMAPCOREHEADER (12 bytes, 16-bit sizes) or BITMAPINFOHEADER and
// later (signed 32-bit sizes; a negative height means top-down rows).
bool bmp_dims(const uint8_t* d, size_t n, ImageDims* out) {
  if (n < 26) return false;
  if (le32(d + 14) == 12) return set_dims(le16(d + 18), le16(d + 20), out);
  const int64_t w = static_cast<int32_t>(le32(d + 18));
  const int64_t h = static_cast<int32_t>(le32(d + 22));
  return set_dims(w, h < 0 ? -h : h, out);
}

// PNM: "P<digit>", then width and height as decimal text separated by
// whitespace, with '#' comments running to the end of a line.
bool pnm_dims(const uint8_t* d, size_t n, ImageDims* out) {
  size_t i = 2;
  int64_t v[2] = {0, 0};
  for (int64_t& x : v) {
    while (i < n) {
      if (d[i] == '#') {
        while (i < n && d[i] != '\n' && d[i] != '\r') ++i;
      } else if (d[i] == ' ' || (d[i] >= '\t' && d[i] <= '\r')) {
        ++i;
      } else {
        break;
      }
    }
    if (i >= n || d[i] < '0' || d[i] > '9') return false;
    while (i < n && d[i] >= '0' && d[i] <= '9') {
      if (x > (int64_t{1} << 40)) return false;  // far beyond any limit; avoids overflow
      x = x * 10 + (d[i++] - '0');
    }
  }
  return set_dims(v[0], v[1], out);
}

// TIFF: ImageWidth (256) and ImageLength (257) in the first IFD, SHORT or LONG.
bool tiff_dims(const uint8_t* d, size_t n, ImageDims* out) {
  if (n < 8) return false;
  const bool le = d[0] == 'I';
  auto u16 = [&](size_t off) -> uint32_t { return le ? le16(d + off) : (d[off] << 8) | d[off + 1]; };
  auto u32 = [&](size_t off) -> uint32_t { return le ? le32(d + off) : be32(d + off); };
  const uint64_t ifd = u32(4);
  if (ifd > n || n - ifd < 2) return false;
  const uint32_t count = u16(ifd);
  int64_t w = 0, h = 0;
  for (uint32_t k = 0; k < count; ++k) {
    const uint64_t e = ifd + 2 + 12ull * k;
    if (e + 12 > n) return false;
    const uint32_t tag = u16(e), type = u16(e + 2);
    if (tag != 256 && tag != 257) continue;
    if (u32(e + 4) != 1) return false;
    uint32_t value = 0;
    if (type == 3) value = u16(e + 8);
    else if (type == 4) value = u32(e + 8);
    else return false;
    (tag == 256 ? w : h) = value;
  }
  return set_dims(w, h, out);
}

// WebP: the first chunk after "RIFF....WEBP" is VP8 (lossy key frame), VP8L
// (lossless) or VP8X (extended, canvas size).
bool webp_dims(const uint8_t* d, size_t n, ImageDims* out) {
  if (n < 30) return false;
  const uint8_t* c = d + 12;
  const uint8_t* p = d + 20;  // chunk payload
  if (std::memcmp(c, "VP8 ", 4) == 0) {
    if (p[3] != 0x9d || p[4] != 0x01 || p[5] != 0x2a) return false;
    return set_dims(le16(p + 6) & 0x3fff, le16(p + 8) & 0x3fff, out);
  }
  if (std::memcmp(c, "VP8L", 4) == 0) {
    if (p[0] != 0x2f) return false;
    const uint32_t bits = le32(p + 1);
    return set_dims((bits & 0x3fff) + 1, ((bits >> 14) & 0x3fff) + 1, out);
  }
  if (std::memcmp(c, "VP8X", 4) == 0) return set_dims(le24(p + 4) + 1, le24(p + 7) + 1, out);
  return false;
}

}  // namespace

ImageFormat sniff_format(const uint8_t* d, size_t n) {
  if (starts_with(d, n, "\xFF\xD8\xFF", 3)) return ImageFormat::Jpeg;
  if (starts_with(d, n, "\x89PNG\r\n\x1a\n", 8)) return ImageFormat::Png;
  if (starts_with(d, n, "BM", 2)) return ImageFormat::Bmp;
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') return ImageFormat::Pnm;
  if (starts_with(d, n, "II\x2a\x00", 4) || starts_with(d, n, "MM\x00\x2a", 4)) return ImageFormat::Tiff;
  if (n >= 12 && starts_with(d, n, "RIFF", 4) && std::memcmp(d + 8, "WEBP", 4) == 0) return ImageFormat::WebP;
  return ImageFormat::Unknown;
}

const char* image_format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::Jpeg: return "JPEG";
    case ImageFormat::Png: return "PNG";
    case ImageFormat::Bmp: return "BMP";
    case ImageFormat::Pnm: return "PNM";
    case ImageFormat::Tiff: return "TIFF";
    case ImageFormat::WebP: return "WebP";
    case ImageFormat::Unknown: break;
  }
  return "unknown";
}

bool header_size(const uint8_t* data, size_t size, ImageFormat format, ImageDims* out) {
  switch (format) {
    case ImageFormat::Png: return png_dims(data, size, out);
    case ImageFormat::Bmp: return bmp_dims(data, size, out);
    case ImageFormat::Pnm: return pnm_dims(data, size, out);
    case ImageFormat::Tiff: return tiff_dims(data, size, out);
    case ImageFormat::WebP: return webp_dims(data, size, out);
    case ImageFormat::Jpeg:  // TurboJPEG's header parser (decode.cpp)
    case ImageFormat::Unknown: break;
  }
  return false;
}

}  // namespace vt
