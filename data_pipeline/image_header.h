// Image format sniffing and header dimensions, before any codec sees the bytes.
//
// Only the formats an ImageFolder reads are recognised: torchvision's
// IMG_EXTENSIONS (.jpg .jpeg .png .ppm .bmp .pgm .tif .tiff .webp), decided by
// magic bytes, never by the file name:
//   JPEG  FF D8 FF
//   PNG   89 'PNG' 0D 0A 1A 0A
//   BMP   'BM'
//   PNM   'P1'..'P6' (PBM/PGM/PPM, ASCII or binary; not PAM 'P7')
//   TIFF  'II' 2A 00 or 'MM' 00 2A (classic TIFF; not BigTIFF)
//   WebP  'RIFF' <size> 'WEBP'
// Everything else is Unknown and must be refused by the caller: the other
// codecs OpenCV's imdecode would try (GDCM/DICOM, which abort()s on bad input;
// GDAL; OpenEXR; JPEG 2000; Radiance HDR; Sun raster; PFM; PAM) stay
// unreachable.
//
// header_size reads width and height from the header alone (JPEG: the SOF
// marker via TurboJPEG), so a caller can refuse a decompression bomb before a
// decoder allocates width * height pixels.
#pragma once
#include <cstddef>
#include <cstdint>

namespace vt {

enum class ImageFormat { Jpeg, Png, Bmp, Pnm, Tiff, WebP, Unknown };

ImageFormat sniff_format(const uint8_t* data, size_t size);
const char* image_format_name(ImageFormat f);  // "JPEG", "PNG", ..., "unknown"

// Pillow's decompression-bomb limit: Image.open raises DecompressionBombError
// above 2 * Image.MAX_IMAGE_PIXELS (89,478,485) pixels.
constexpr int64_t kMaxImagePixels = 2 * 89478485LL;

// Width and height (pixels, > 0) declared by the header of `format`; false
// when the header is too short or malformed. Never reads past data + size.
struct ImageDims {
  int64_t width = 0, height = 0;
};
bool header_size(const uint8_t* data, size_t size, ImageFormat format, ImageDims* out);

}  // namespace vt
