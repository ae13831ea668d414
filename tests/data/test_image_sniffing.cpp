// Format sniffing before any codec: only the ImageFolder formats reach a
// decoder, the sniffed format's decoder is the one cv::imdecode picks, and
// decompression bombs are refused from the header. Regression inputs found by
// fuzzing live in tests/fixtures/regressions/.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data_pipeline/decode.h"
#include "data_pipeline/image_header.h"
#include "data_pipeline/loader.h"
#include "data_pipeline/to_rgb.h"
#include "data_test_util.h"

namespace vt {
namespace {

std::string expect_corrupt(const std::vector<uint8_t>& b, const std::string& name) {
  try {
    decode_image(b.data(), b.size(), name);
  } catch (const CorruptImage& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no CorruptImage for " << name;
  return "";
}

std::vector<uint8_t> encode(const std::string& ext, const cv::Mat& m, const std::vector<int>& params = {}) {
  std::vector<uint8_t> out;
  EXPECT_TRUE(cv::imencode(ext, m, out, params)) << ext;
  return out;
}

// Fuzzing found: 128 zero bytes + "DICM" made cv::imdecode hand the bytes to
// GDCM, which abort()s. It must be an ordinary CorruptImage naming the file.
TEST(ImageSniffing, DicomPreambleIsRefusedBeforeAnyCodec) {
  const auto bytes = read_file_bytes(VT_FIXTURES_DIR "/regressions/dicom_preamble.png");
  ASSERT_EQ(bytes.size(), 132u);
  EXPECT_EQ(sniff_format(bytes.data(), bytes.size()), ImageFormat::Unknown);
  const std::string msg = expect_corrupt(bytes, "cls/dicom_preamble.png");
  EXPECT_NE(msg.find("not a JPEG, PNG"), std::string::npos) << msg;
  EXPECT_THROW(probe_image(bytes.data(), bytes.size(), "p.png"), CorruptImage);
}

// The loader with on_corrupt: skip survives it (before, the process died).
TEST(ImageSniffing, LoaderSkipsTheDicomPreambleUnderAnImageName) {
  testutil::TempDir t("sniff_skip");
  for (const char* cls : {"a", "b"})
    for (int i = 0; i < 2; ++i)
      testutil::write_bytes(t.path / cls / ("img" + std::to_string(i) + ".jpg"),
                            testutil::encode_rgb_jpeg(testutil::synthetic_rgb(20, 16, i)));
  testutil::write_bytes(t.path / "a" / "scan.png", read_file_bytes(VT_FIXTURES_DIR "/regressions/dicom_preamble.png"));
  ImagePipelineConfig pc;
  pc.size = 16;
  auto ds = std::make_shared<ImageFolderDataset>(t.path.string(), pc);
  ASSERT_EQ(ds->size(), 5);
  LoaderConfig c;
  c.batch_size = 4;
  c.drop_last = false;
  c.workers = 2;
  c.on_corrupt = OnCorrupt::Skip;
  Loader l(ds, c);
  l.start_epoch(0, eval_order(ds->size(), 0, 1));
  Batch b;
  while (l.next(b)) {
  }
  EXPECT_EQ(l.corrupt_count(), 1);
  ASSERT_EQ(l.corrupt_names().size(), 1u);
  EXPECT_NE(l.corrupt_names()[0].find("scan.png"), std::string::npos);
}

// Every format OpenCV can decode but an ImageFolder does not read is refused,
// although cv::imdecode itself would decode it.
TEST(ImageSniffing, OtherOpenCvFormatsAreRefused) {
  const cv::Mat bgr = testutil::synthetic_rgb(8, 6, 4);
  cv::Mat f32;
  bgr.convertTo(f32, CV_32F, 1.0 / 255);
  const std::vector<std::pair<std::string, cv::Mat>> others = {
      {".hdr", f32}, {".ras", bgr}, {".pam", bgr}, {".pfm", f32}, {".jp2", bgr}};
  int refused = 0;
  for (const auto& [ext, m] : others) {
    SCOPED_TRACE(ext);
    std::vector<uint8_t> b;
    try {
      if (!cv::imencode(ext, m, b)) continue;
    } catch (const cv::Exception&) {
      continue;  // this OpenCV lacks the encoder
    }
    ASSERT_FALSE(cv::imdecode(b, cv::IMREAD_UNCHANGED).empty());
    EXPECT_EQ(sniff_format(b.data(), b.size()), ImageFormat::Unknown);
    expect_corrupt(b, "img" + ext);
    ++refused;
  }
  EXPECT_GE(refused, 3);
}

// The image bytes, rotated so that offset 128 of the encoded file reads
// "DICM" (GDCM's signature): the sniffed format's decoder must still win.
TEST(ImageSniffing, SniffedDecoderWinsOverDicomSignature) {
  struct Case {
    std::string ext;
    int channels;
    std::vector<int> params;
  };
  // Gray PGM and TIFF: their 3-channel writers reorder BGR to RGB, which
  // would break the pattern; BMP stores BGR as it is.
  const std::vector<Case> cases = {
      {".bmp", 3, {}}, {".pgm", 1, {}}, {".tiff", 1, {cv::IMWRITE_TIFF_COMPRESSION, 1}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.ext);
    bool placed = false;
    for (int phase = 0; phase < 4 && !placed; ++phase) {
      cv::Mat m(16, 16, c.channels == 3 ? CV_8UC3 : CV_8UC1);
      for (size_t i = 0; i < m.total() * m.elemSize(); ++i) m.data[i] = static_cast<uint8_t>("DICM"[(i + phase) % 4]);
      const auto b = encode(c.ext, m, c.params);
      if (b.size() < 132 || std::memcmp(b.data() + 128, "DICM", 4) != 0) continue;
      placed = true;
      const cv::Mat rgb = decode_image(b.data(), b.size(), "x" + c.ext).rgb;
      cv::Mat want;
      cv::cvtColor(m, want, c.channels == 3 ? cv::COLOR_BGR2RGB : cv::COLOR_GRAY2RGB);
      EXPECT_EQ(testutil::max_abs_diff(rgb, want), 0);
    }
    EXPECT_TRUE(placed) << "could not place DICM at offset 128";
  }
}

TEST(ImageSniffing, HeaderSizeOfEveryFormat) {
  const cv::Mat bgr = testutil::synthetic_rgb(37, 23, 5);
  cv::Mat gray;
  cv::cvtColor(bgr, gray, cv::COLOR_BGR2GRAY);
  cv::Mat g16;
  gray.convertTo(g16, CV_16U, 257);
  const std::vector<std::tuple<std::string, cv::Mat, std::vector<int>, ImageFormat>> cases = {
      {".png", bgr, {}, ImageFormat::Png},
      {".bmp", bgr, {}, ImageFormat::Bmp},
      {".ppm", bgr, {}, ImageFormat::Pnm},
      {".ppm", bgr, {cv::IMWRITE_PXM_BINARY, 0}, ImageFormat::Pnm},  // P3, ASCII
      {".pgm", gray, {}, ImageFormat::Pnm},
      {".pbm", gray, {}, ImageFormat::Pnm},
      {".tiff", bgr, {}, ImageFormat::Tiff},
      {".tiff", g16, {}, ImageFormat::Tiff},
      {".webp", bgr, {cv::IMWRITE_WEBP_QUALITY, 90}, ImageFormat::WebP},   // VP8 (lossy)
      {".webp", bgr, {cv::IMWRITE_WEBP_QUALITY, 101}, ImageFormat::WebP},  // VP8L (lossless)
      {".jpg", bgr, {}, ImageFormat::Jpeg}};
  for (const auto& [ext, m, params, fmt] : cases) {
    SCOPED_TRACE(ext + " " + std::to_string(m.type()));
    const auto b = encode(ext, m, params);
    ASSERT_EQ(sniff_format(b.data(), b.size()), fmt);
    if (fmt != ImageFormat::Jpeg) {
      ImageDims dims;
      ASSERT_TRUE(header_size(b.data(), b.size(), fmt, &dims));
      EXPECT_EQ(dims.width, 37);
      EXPECT_EQ(dims.height, 23);
    }
    const DecodedImage d = decode_image(b.data(), b.size(), "x" + ext);
    EXPECT_EQ(d.rgb.cols, 37);
    EXPECT_EQ(d.rgb.rows, 23);
    EXPECT_EQ(d.rgb.type(), CV_8UC3);
  }
}

// A 54-byte BMP header declaring w x h pixels (24-bit) and no pixel data.
std::vector<uint8_t> bmp_header(int32_t w, int32_t h) {
  std::vector<uint8_t> b(54, 0);
  auto put32 = [&](size_t off, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[off + i] = static_cast<uint8_t>(v >> (8 * i));
  };
  b[0] = 'B';
  b[1] = 'M';
  put32(2, 54);
  put32(10, 54);
  put32(14, 40);
  put32(18, static_cast<uint32_t>(w));
  put32(22, static_cast<uint32_t>(h));
  b[26] = 1;
  b[28] = 24;
  return b;
}

TEST(ImageSniffing, DecompressionBombsAreRefusedFromTheHeader) {
  // Pillow refuses above 2 * 89478485 pixels.
  EXPECT_EQ(kMaxImagePixels, 178956970);
  const std::string big = expect_corrupt(bmp_header(20000, -10000), "bomb.bmp");  // top-down rows
  EXPECT_NE(big.find("20000 x 10000 = 200000000 pixels"), std::string::npos) << big;
  const std::vector<uint8_t> ppm_text = {'P', '6', ' ', '#', 'c', '\n', '2', '0', '0', '0', '0', ' ',
                                         '1', '0', '0', '0', '0', '\n', '2', '5', '5', '\n'};
  EXPECT_NE(expect_corrupt(ppm_text, "bomb.ppm").find("decompression-bomb"), std::string::npos);
  // Just under the limit the header passes and the missing data is the error.
  const std::string small = expect_corrupt(bmp_header(17895697, 10), "short.bmp");
  EXPECT_EQ(small.find("decompression-bomb"), std::string::npos) << small;
  // A JPEG header declaring 65000 x 65000.
  auto jpg = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(16, 8, 6));
  bool patched = false;
  for (size_t i = 2; i + 9 < jpg.size() && !patched; ++i) {
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {  // SOF0: FF C0 len(2) precision(1) height(2) width(2)
      jpg[i + 5] = jpg[i + 7] = 65000 >> 8;
      jpg[i + 6] = jpg[i + 8] = 65000 & 0xff;
      patched = true;
    }
  }
  ASSERT_TRUE(patched);
  EXPECT_NE(expect_corrupt(jpg, "bomb.jpg").find("65000 x 65000"), std::string::npos);
  EXPECT_THROW(probe_image(jpg.data(), jpg.size(), "bomb.jpg"), CorruptImage);
}

TEST(ImageSniffing, TruncatedHeadersAreCorruptNamingTheFile) {
  const cv::Mat bgr = testutil::synthetic_rgb(9, 7, 7);
  for (const std::string ext : {".png", ".bmp", ".ppm", ".tiff", ".webp"}) {
    const auto b = encode(ext, bgr);
    for (size_t n : {size_t{2}, size_t{12}, size_t{20}}) {
      SCOPED_TRACE(ext + " cut at " + std::to_string(n));
      expect_corrupt(std::vector<uint8_t>(b.begin(), b.begin() + std::min(n, b.size())), "cut" + ext);
    }
  }
}

TEST(ToRgb, GrayAlphaDropsAlphaAndOtherLayoutsAreCorrupt) {
  cv::Mat la(2, 3, CV_8UC2);
  for (int i = 0; i < 6; ++i) {
    la.data[2 * i] = static_cast<uint8_t>(40 * i);
    la.data[2 * i + 1] = 0;
  }
  const cv::Mat rgb = to_rgb8(la, "la.tiff");
  ASSERT_EQ(rgb.type(), CV_8UC3);
  EXPECT_EQ(rgb.at<cv::Vec3b>(1, 2), cv::Vec3b(200, 200, 200));
  EXPECT_THROW(to_rgb8(cv::Mat(2, 2, CV_32FC3), "f.tiff"), CorruptImage);
  EXPECT_THROW(to_rgb8(cv::Mat(2, 2, CV_8UC(5)), "c5.tiff"), CorruptImage);
}

}  // namespace
}  // namespace vt
