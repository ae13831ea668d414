#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "data_test_util.h"

namespace vt {
namespace {

DecodedImage decode_vec(const std::vector<uint8_t>& b, const std::string& name, double s = 1.0) {
  return decode_image(b.data(), b.size(), name, s);
}

void expect_corrupt_naming(const std::vector<uint8_t>& b, const std::string& name) {
  try {
    decode_vec(b, name);
    FAIL() << "no CorruptImage for " << name;
  } catch (const CorruptImage& e) {
    EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
  }
}

TEST(Decode, ImagenetGrayscaleImagesBecomeRgb) {
  const auto fx = testutil::load_fixture("imagefolder_imagenet_samples.json");
  const std::string root = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "shared data missing";
  const auto gray = fx["grayscale"].get<std::vector<std::string>>();
  ASSERT_EQ(gray.size(), 23u);
  for (const auto& rel : gray) {
    const auto bytes = read_file_bytes(root + "/" + rel);
    const DecodedImage d = decode_vec(bytes, rel, 0.25);
    ASSERT_EQ(d.rgb.type(), CV_8UC3) << rel;
    cv::Mat planes[3];
    cv::split(d.rgb, planes);
    EXPECT_EQ(cv::norm(planes[0], planes[1], cv::NORM_INF), 0) << rel;
    EXPECT_EQ(cv::norm(planes[0], planes[2], cv::NORM_INF), 0) << rel;
  }
}

TEST(Decode, AllImagenetSamplesDecode) {
  const std::string root = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "shared data missing";
  ImageFolder f(root);
  int non_jpeg = 0;
  // Every third file keeps the test under a second; the grayscale test and
  // the loader cover the rest.
  for (size_t i = 0; i < f.samples().size(); i += 3) {
    const auto& s = f.samples()[i];
    const auto bytes = read_file_bytes(s.path);
    if (sniff_format(bytes.data(), bytes.size()) != ImageFormat::Jpeg) ++non_jpeg;
    // 1/8 DCT scale keeps the sweep fast; the full path is covered elsewhere.
    const DecodedImage d = decode_vec(bytes, s.path, 0.125);
    ASSERT_EQ(d.rgb.type(), CV_8UC3) << s.path;
    ASSERT_GT(d.full_width, 0);
  }
  RecordProperty("non_jpeg", non_jpeg);
}

TEST(Decode, CmykAdobeJpegIsInverted) {
  // Flat CMYK blocks; TurboJPEG writes an Adobe marker, so the stored values
  // are read as inverted ink: rgb = stored_c * stored_k / 255 (PIL's
  // "CMYK;I" followed by cmyk2rgb).
  const int w = 32, h = 16;
  std::vector<uint8_t> px(w * h * 4);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &px[(y * w + x) * 4];
      if (x < 16) { p[0] = 255; p[1] = 128; p[2] = 0; p[3] = 255; }
      else { p[0] = 255; p[1] = 255; p[2] = 255; p[3] = 128; }
    }
  const auto jpg = testutil::encode_jpeg(px.data(), w, h, TJPF_CMYK, 100);
  const DecodedImage d = decode_vec(jpg, "cmyk.jpg");
  ASSERT_EQ(d.rgb.type(), CV_8UC3);
  const cv::Vec3b a = d.rgb.at<cv::Vec3b>(8, 4), b = d.rgb.at<cv::Vec3b>(8, 28);
  const int ea[3] = {255, 128, 0}, eb[3] = {128, 128, 128};
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(a[c], ea[c], 3) << c;
    EXPECT_NEAR(b[c], eb[c], 3) << c;
  }
}

TEST(Decode, PngNamedJpegAndOtherPngKinds) {
  const cv::Mat rgb = testutil::synthetic_rgb(21, 13, 3);
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> png;
  cv::imencode(".png", bgr, png);
  const DecodedImage d = decode_vec(png, "n0000/fake.JPEG");
  EXPECT_EQ(testutil::max_abs_diff(d.rgb, rgb), 0);

  // Gray, gray + alpha (via BGRA), and 16-bit PNGs all come out as RGB8.
  cv::Mat gray(5, 7, CV_8UC1);
  for (int i = 0; i < 35; ++i) gray.data[i] = static_cast<uint8_t>(i * 7);
  cv::imencode(".png", gray, png);
  cv::Mat g3 = decode_vec(png, "g.png").rgb;
  ASSERT_EQ(g3.type(), CV_8UC3);
  EXPECT_EQ(g3.at<cv::Vec3b>(2, 3), cv::Vec3b(17 * 7, 17 * 7, 17 * 7));

  cv::Mat bgra(4, 4, CV_8UC4, cv::Scalar(10, 20, 30, 0));  // alpha 0 is dropped, not composited
  cv::imencode(".png", bgra, png);
  EXPECT_EQ(decode_vec(png, "a.png").rgb.at<cv::Vec3b>(1, 1), cv::Vec3b(30, 20, 10));

  // 16-bit gray is clipped to [0, 255], as Pillow's I;16 -> RGB (not
  // scaled: 25700 is 255, not 100); colour keeps the high byte.
  cv::Mat g16(3, 3, CV_16UC1, cv::Scalar(65535));
  g16.at<uint16_t>(1, 1) = 257 * 100;
  g16.at<uint16_t>(2, 2) = 77;
  cv::imencode(".png", g16, png);
  const cv::Mat d16 = decode_vec(png, "g16.png").rgb;
  EXPECT_EQ(d16.at<cv::Vec3b>(0, 0), cv::Vec3b(255, 255, 255));
  EXPECT_EQ(d16.at<cv::Vec3b>(1, 1), cv::Vec3b(255, 255, 255));
  EXPECT_EQ(d16.at<cv::Vec3b>(2, 2), cv::Vec3b(77, 77, 77));
}

// 16-bit PNGs against Pillow's convert('RGB') (torchvision's default
// loader), fixtures from tools/png16_fixtures.py: RGB, RGBA and gray +
// alpha keep the high byte, gray clips to [0, 255]. The decoder scaled by
// 255/65535 with rounding: 65280 gave 254 where Pillow gives 255, 511 gave
// 2 where Pillow gives 1, gray 25700 gave 100 where Pillow gives 255.
TEST(Decode, SixteenBitPngsMatchPillow) {
  const nlohmann::json want = testutil::load_fixture("png16/png16_pillow.json");
  ASSERT_EQ(want.size(), 4u);
  for (const auto& [file, w] : want.items()) {
    const std::vector<uint8_t> bytes = read_file_bytes(std::string(VT_FIXTURES_DIR) + "/data/png16/" + file);
    const cv::Mat rgb = decode_vec(bytes, file).rgb;
    const auto& rows = w.at("rgb");
    ASSERT_EQ(rgb.rows, static_cast<int>(rows.size())) << file;
    ASSERT_EQ(rgb.cols, static_cast<int>(rows[0].size())) << file;
    for (int y = 0; y < rgb.rows; ++y)
      for (int x = 0; x < rgb.cols; ++x)
        for (int c = 0; c < 3; ++c)
          EXPECT_EQ(static_cast<int>(rgb.at<cv::Vec3b>(y, x)[c]), rows[y][x][c].get<int>())
              << file << " (Pillow mode " << w.at("mode").get<std::string>() << ") pixel " << x << " channel " << c;
  }
}

TEST(Decode, JpegMissingOnlyEoiDecodesIdentically) {
  const auto jpg = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(40, 24, 1));
  ASSERT_EQ(jpg[jpg.size() - 2], 0xFF);
  ASSERT_EQ(jpg[jpg.size() - 1], 0xD9);
  const std::vector<uint8_t> cut(jpg.begin(), jpg.end() - 2);
  const DecodedImage full = decode_vec(jpg, "a.jpg"), trunc = decode_vec(cut, "a_noeoi.jpg");
  EXPECT_EQ(testutil::max_abs_diff(full.rgb, trunc.rgb), 0);
}

TEST(Decode, TruncatedMidScanAndGarbageAreCorruptNamingTheFile) {
  const auto jpg = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(64, 64, 2));
  expect_corrupt_naming(std::vector<uint8_t>(jpg.begin(), jpg.begin() + jpg.size() * 2 / 3), "half.jpg");
  expect_corrupt_naming(std::vector<uint8_t>(jpg.begin(), jpg.begin() + 40), "header_only.jpg");
  const std::string text = "this is not an image, just text\n";
  expect_corrupt_naming(std::vector<uint8_t>(text.begin(), text.end()), "notes_named.jpg");
  expect_corrupt_naming({}, "empty.jpg");
}

// A JPEG whose header fails (cut before its scan) left TurboJPEG's per-thread
// decompressor mid-header, and the thread's next decode of a good JPEG failed
// ("tjDecompress2(): Invalid argument"): with data.on_corrupt=skip the good
// replacement was skipped too. The good file must decode as it does alone.
TEST(Decode, GoodJpegAfterACorruptOneOnTheSameThread) {
  const auto good = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(12, 12, 6));
  const DecodedImage alone = decode_vec(good, "good.jpg");
  const auto cut_src = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(30, 30, 5));
  for (const size_t keep : {cut_src.size() / 3, cut_src.size() * 2 / 3, size_t{40}}) {
    const std::vector<uint8_t> cut(cut_src.begin(), cut_src.begin() + keep);
    EXPECT_THROW(decode_vec(cut, "cut.jpg"), CorruptImage) << keep;
    EXPECT_THROW(decode_vec(cut, "cut.jpg"), CorruptImage) << keep;
    DecodedImage after;
    ASSERT_NO_THROW(after = decode_vec(good, "good.jpg")) << "after a file cut at " << keep << " bytes";
    EXPECT_EQ(testutil::max_abs_diff(alone.rgb, after.rgb), 0);
  }
}

TEST(Decode, DctScaleChoice) {
  int n = 0, d = 0;
  choose_dct_scale(1.0, &n, &d);
  EXPECT_EQ(n * 1.0 / d, 1.0);
  choose_dct_scale(0.3, &n, &d);  // 3/8 is the smallest eighth >= 0.3
  EXPECT_DOUBLE_EQ(n * 1.0 / d, 0.375);
  choose_dct_scale(0.5, &n, &d);
  EXPECT_DOUBLE_EQ(n * 1.0 / d, 0.5);
  choose_dct_scale(0.01, &n, &d);
  EXPECT_DOUBLE_EQ(n * 1.0 / d, 0.125);
  const auto jpg = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(81, 40, 4));
  const DecodedImage s = decode_vec(jpg, "s.jpg", 0.3);  // 3/8: ceil(81*3/8)=31, ceil(40*3/8)=15
  EXPECT_EQ(s.rgb.cols, 31);
  EXPECT_EQ(s.rgb.rows, 15);
  EXPECT_EQ(s.full_width, 81);
  EXPECT_EQ(s.full_height, 40);
  const ImageSize p = probe_image(jpg.data(), jpg.size(), "s.jpg");
  EXPECT_EQ(p.width, 81);
  EXPECT_EQ(p.height, 40);
}

}  // namespace
}  // namespace vt
