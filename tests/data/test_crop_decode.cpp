// data.decode: crop (data_pipeline/crop_decode.h, jpeg_region.h). The
// reference is always the whole-image decode through TurboJPEG
// (decode_image), an independent path through the same codec: a region must
// reproduce its pixels exactly, and the train transform in crop mode must
// reproduce full mode's floats exactly; files the region path does not take
// fall back and still match; errors stay decode_image's.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "data_pipeline/crop_decode.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "data_pipeline/jpeg_region.h"
#include "data_pipeline/loader.h"
#include "data_pipeline/resample.h"
#include "data_test_util.h"

namespace vt {
namespace {

// A textured image whose chroma changes every pixel, so chroma upsampling
// at a region border would show if the border effects leaked in.
cv::Mat noisy_rgb(int w, int h, int seed) {
  cv::Mat m = testutil::synthetic_rgb(w, h, seed);
  std::mt19937 g(static_cast<uint32_t>(seed));
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w * 3; ++x) m.ptr<uint8_t>(y)[x] = static_cast<uint8_t>(m.ptr<uint8_t>(y)[x] ^ (g() & 63));
  return m;
}

std::vector<uint8_t> encode(const cv::Mat& rgb, int subsamp, bool progressive, bool gray = false) {
  tjhandle t = tjInitCompress();
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  cv::Mat src = rgb;
  int pf = TJPF_RGB;
  if (gray) {
    cv::cvtColor(rgb, src, cv::COLOR_RGB2GRAY);
    pf = TJPF_GRAY;
    subsamp = TJSAMP_GRAY;
  }
  const int rc = tjCompress2(t, src.data, src.cols, static_cast<int>(src.step[0]), src.rows, pf, &buf, &size, subsamp,
                             90, progressive ? TJFLAG_PROGRESSIVE : 0);
  EXPECT_EQ(rc, 0) << tjGetErrorStr2(t);
  std::vector<uint8_t> out(buf, buf + size);
  tjFree(buf);
  tjDestroy(t);
  return out;
}

// The pixels [x0, x1) x [y0, y1) of decode_jpeg_region against the same
// pixels of the whole decode at num/den; returns the max difference.
int region_vs_full(const std::vector<uint8_t>& jpg, const std::string& name, int num, int den, int x0, int y0, int x1,
                   int y1, const cv::Mat& full) {
  JpegRegion r;
  EXPECT_TRUE(decode_jpeg_region(jpg.data(), jpg.size(), name, num, den, x0, y0, x1, y1, &r)) << name;
  EXPECT_EQ(r.scaled_width, full.cols);
  EXPECT_EQ(r.scaled_height, full.rows);
  // The decoded rectangle covers the request, widened by at most the margin
  // and one iMCU (32 pixels at most at scale 1) on the left.
  EXPECT_LE(r.x, x0);
  EXPECT_LE(r.y, y0);
  EXPECT_GE(r.x + r.rgb.cols, x1);
  EXPECT_GE(r.y + r.rgb.rows, y1);
  EXPECT_LE(r.rgb.cols, (x1 - x0) + 2 * kRegionMargin + 32);
  EXPECT_LE(r.rgb.rows, (y1 - y0) + 2 * kRegionMargin);
  const cv::Mat got = r.rgb(cv::Rect(x0 - r.x, y0 - r.y, x1 - x0, y1 - y0));
  const cv::Mat want = full(cv::Rect(x0, y0, x1 - x0, y1 - y0));
  return testutil::max_abs_diff(got, want);
}

TEST(CropDecode, RegionEqualsWholeDecodeAcrossSubsamplingAndScales) {
  const cv::Mat rgb = noisy_rgb(203, 150, 7);
  struct Kind {
    const char* name;
    int subsamp;
    bool progressive, gray;
  } kinds[] = {{"420", TJSAMP_420, false, false}, {"422", TJSAMP_422, false, false},
               {"444", TJSAMP_444, false, false}, {"440", TJSAMP_440, false, false},
               {"gray", TJSAMP_GRAY, false, true}, {"420_progressive", TJSAMP_420, true, false}};
  std::mt19937 g(3);
  for (const Kind& k : kinds) {
    const auto jpg = encode(rgb, k.subsamp, k.progressive, k.gray);
    for (int den : {1, 2, 4, 8}) {
      const cv::Mat full = decode_image(jpg.data(), jpg.size(), k.name, 1.0 / den).rgb;
      ASSERT_EQ(full.cols, (203 + den - 1) / den);
      // Edges, iMCU-aligned boxes, single pixels, the whole image, random.
      std::vector<std::array<int, 4>> boxes = {{0, 0, full.cols, full.rows}, {0, 0, 1, 1},
                                               {full.cols - 1, full.rows - 1, full.cols, full.rows}};
      if (full.cols > 32 && full.rows > 32) boxes.push_back({16, 16, 32, 32});
      for (int i = 0; i < 40; ++i) {
        const int x0 = static_cast<int>(g() % full.cols), y0 = static_cast<int>(g() % full.rows);
        const int x1 = x0 + 1 + static_cast<int>(g() % (full.cols - x0));
        const int y1 = y0 + 1 + static_cast<int>(g() % (full.rows - y0));
        boxes.push_back({x0, y0, x1, y1});
      }
      for (const auto& b : boxes)
        ASSERT_EQ(region_vs_full(jpg, k.name, 1, den, b[0], b[1], b[2], b[3], full), 0)
            << k.name << " 1/" << den << " box " << b[0] << "," << b[1] << " - " << b[2] << "," << b[3];
    }
  }
}

// Real photos (ImageNet samples): the region of every RandomResizedCrop box
// drawn for them equals the whole decode at the scale the crop uses.
TEST(CropDecode, RegionEqualsWholeDecodeOnImagenetSamples) {
  const std::string root = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << "shared data missing";
  ImageFolder f(root);
  int taken = 0, jpegs = 0;
  for (size_t i = 0; i < f.samples().size(); i += 25) {
    const auto& path = f.samples()[i].path;
    const auto bytes = read_file_bytes(path);
    if (sniff_format(bytes.data(), bytes.size()) != ImageFormat::Jpeg) continue;
    ++jpegs;
    const ImageSize sz = probe_image(bytes.data(), bytes.size(), path);
    Philox rng(11, i);
    const CropBox b = rrc_box(sz.width, sz.height, rng);
    const double scale = rrc_dct_scale(true, b.width, b.height, 224, 224);
    const int den = static_cast<int>(std::lround(1 / scale));
    const cv::Mat full = decode_image(bytes.data(), bytes.size(), path, scale).rgb;
    const int x0 = static_cast<int>(b.left * scale), y0 = static_cast<int>(b.top * scale);
    const int x1 = std::min(full.cols, static_cast<int>(std::ceil((b.left + b.width) * scale)));
    const int y1 = std::min(full.rows, static_cast<int>(std::ceil((b.top + b.height) * scale)));
    JpegRegion r;
    if (!decode_jpeg_region(bytes.data(), bytes.size(), path, 1, den, x0, y0, x1, y1, &r)) continue;
    ++taken;
    EXPECT_EQ(testutil::max_abs_diff(r.rgb(cv::Rect(x0 - r.x, y0 - r.y, x1 - x0, y1 - y0)),
                                     full(cv::Rect(x0, y0, x1 - x0, y1 - y0))),
              0)
        << path << " 1/" << den;
  }
  EXPECT_GE(jpegs, 35);
  EXPECT_GE(taken, jpegs - 2) << "the region path refused most photos";
}

// The whole train transform (RRC + flip + RandAugment + normalize + erasing)
// in crop mode gives full mode's floats, with and without DCT scaling, over
// every kind of file in a folder: photos, the grayscale and CMYK ones, the
// PNG named .JPEG (ImageNet samples), plus synthetic PNG / CMYK / gray.
TEST(CropDecode, TrainTransformCropEqualsFull) {
  std::vector<std::pair<std::string, std::vector<uint8_t>>> files;
  const cv::Mat rgb = noisy_rgb(300, 260, 5);
  files.push_back({"ycc420.jpg", encode(rgb, TJSAMP_420, false)});
  files.push_back({"gray.jpg", encode(rgb, TJSAMP_GRAY, false, true)});
  files.push_back({"progressive.jpg", encode(rgb, TJSAMP_422, true)});
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> png;
  cv::imencode(".png", bgr, png);
  files.push_back({"png_named.jpg", png});
  std::vector<uint8_t> cmyk(300 * 260 * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<uint8_t>(i * 7 % 251);
  files.push_back({"cmyk.jpg", testutil::encode_jpeg(cmyk.data(), 300, 260, TJPF_CMYK, 90)});
  const std::string root = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  if (std::filesystem::exists(root)) {
    ImageFolder f(root);
    for (size_t i = 0; i < f.samples().size(); i += 40) files.push_back({f.samples()[i].path, read_file_bytes(f.samples()[i].path)});
  }
  const int S = 64;
  for (bool dct : {true, false}) {
    ImagePipelineConfig full;
    full.size = S;
    full.dct_scaling = dct;
    ImagePipelineConfig crop = full;
    crop.decode = DecodeMode::Crop;
    for (size_t i = 0; i < files.size(); ++i) {
      const auto& [name, bytes] = files[i];
      std::vector<float> a(3 * S * S), b(3 * S * S);
      Philox ra(1, i), rb(1, i);
      process_image(bytes.data(), bytes.size(), name, full, ra, a.data());
      process_image(bytes.data(), bytes.size(), name, crop, rb, b.data());
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << name << " dct " << dct;
    }
  }
}

// RandomResizedCrop alone (uint8, before flips and augmentation) through
// decode_crop_resize and through a whole decode + resize_scaled_box, on a
// crop whose box is iMCU-aligned and one that is not, at scale 1 and 1/4.
TEST(CropDecode, DecodeCropResizeEqualsWholeDecodeThenResize) {
  const auto jpg = encode(noisy_rgb(320, 240, 9), TJSAMP_420, false);
  for (const CropBox b : {CropBox{32, 48, 128, 160}, CropBox{7, 13, 201, 150}}) {
    for (bool dct : {false, true}) {
      const int out = 32;  // need max(32/160, 32/128) = 0.25, max(32/201, 32/150) = 0.21: 1/4 both
      cv::Mat got;
      ASSERT_TRUE(decode_crop_resize(jpg.data(), jpg.size(), "a.jpg", dct, 320, 240, b, out, &got));
      const double s = rrc_dct_scale(dct, b.width, b.height, out, out);
      EXPECT_EQ(s, dct ? 0.25 : 1.0);
      const DecodedImage d = decode_image(jpg.data(), jpg.size(), "a.jpg", s);
      const cv::Mat want = resize_scaled_box(d.rgb, 0, 0, 320, 240, d.rgb.cols, d.rgb.rows, b, out);
      EXPECT_EQ(testutil::max_abs_diff(got, want), 0) << b.left << " " << dct;
      if (!dct) {  // unscaled: exactly PIL's crop then resize of the whole decode
        const cv::Mat crop = d.rgb(cv::Rect(b.left, b.top, b.width, b.height));
        EXPECT_EQ(testutil::max_abs_diff(got, resize_pil(crop, out, out, ResampleFilter::Bicubic)), 0);
      }
    }
  }
}

TEST(CropDecode, FilesTheRegionPathDoesNotTake) {
  JpegRegion r;
  std::vector<uint8_t> cmyk(64 * 32 * 4, 100);
  const auto cj = testutil::encode_jpeg(cmyk.data(), 64, 32, TJPF_CMYK, 90);
  EXPECT_FALSE(decode_jpeg_region(cj.data(), cj.size(), "cmyk.jpg", 1, 1, 0, 0, 8, 8, &r));
  const auto jpg = encode(noisy_rgb(64, 48, 1), TJSAMP_420, false);
  const std::vector<uint8_t> no_eoi(jpg.begin(), jpg.end() - 2);
  EXPECT_FALSE(decode_jpeg_region(no_eoi.data(), no_eoi.size(), "noeoi.jpg", 1, 1, 0, 0, 8, 8, &r));
  EXPECT_TRUE(decode_jpeg_region(jpg.data(), jpg.size(), "ok.jpg", 1, 1, 0, 0, 8, 8, &r));
  EXPECT_THROW(decode_jpeg_region(jpg.data(), jpg.size(), "ok.jpg", 1, 1, 0, 0, 65, 8, &r), std::invalid_argument);
}

std::string error_of(const std::vector<uint8_t>& bytes, const std::string& name, const ImagePipelineConfig& cfg) {
  std::vector<float> out(3 * cfg.size * cfg.size);
  Philox rng(0, 0);
  try {
    process_image(bytes.data(), bytes.size(), name, cfg, rng, out.data());
  } catch (const CorruptImage& e) {
    return e.what();
  }
  ADD_FAILURE() << "no CorruptImage for " << name;
  return "";
}

// A JPEG cut inside its scan fails in crop mode with decode_image's message
// (it ends without EOI, so it takes the whole decode); a broken scan header
// fails naming the file, and the thread's decompressor still works after.
TEST(CropDecode, ErrorsNameTheFileAsWholeDecodeDoes) {
  const auto jpg = encode(noisy_rgb(256, 256, 2), TJSAMP_420, false);
  const std::vector<uint8_t> cut(jpg.begin(), jpg.begin() + jpg.size() * 2 / 3);
  ImagePipelineConfig full;
  full.size = 32;
  ImagePipelineConfig crop = full;
  crop.decode = DecodeMode::Crop;
  const std::string want = error_of(cut, "cut.jpg", full);
  EXPECT_NE(want.find("cut.jpg"), std::string::npos) << want;
  EXPECT_EQ(error_of(cut, "cut.jpg", crop), want);

  // SOS naming a component the frame does not have: libjpeg's error.
  std::vector<uint8_t> bad = jpg;
  size_t sos = 2;
  while (sos + 5 < bad.size() && !(bad[sos] == 0xFF && bad[sos + 1] == 0xDA)) ++sos;
  ASSERT_LT(sos + 5, bad.size());
  bad[sos + 5] = 0x77;  // first component selector
  JpegRegion r;
  try {
    decode_jpeg_region(bad.data(), bad.size(), "bad_sos.jpg", 1, 1, 0, 0, 8, 8, &r);
    ADD_FAILURE() << "no CorruptImage";
  } catch (const CorruptImage& e) {
    EXPECT_NE(std::string(e.what()).find("bad_sos.jpg"), std::string::npos) << e.what();
  }
  const cv::Mat whole = decode_image(jpg.data(), jpg.size(), "ok.jpg").rgb;
  EXPECT_EQ(region_vs_full(jpg, "ok.jpg", 1, 1, 10, 20, 100, 90, whole), 0);
}

// Through the loader with 1 and 3 workers (each with its own thread-local
// decompressor), crop-mode batches are full-mode batches, bit for bit.
TEST(CropDecode, LoaderBatchesEqualFullModeForAnyWorkerCount) {
  testutil::TempDir t("crop_ld");
  for (int k = 0; k < 24; ++k) {
    const cv::Mat img = noisy_rgb(90 + 37 * k % 200, 70 + 23 * k % 150, k);
    testutil::write_bytes(t.path / (k % 2 ? "a" : "b") / ("i" + std::to_string(k) + ".jpg"),
                          encode(img, k % 3 == 0 ? TJSAMP_444 : TJSAMP_420, k % 5 == 0));
  }
  auto batches = [&](DecodeMode m, int workers) {
    ImagePipelineConfig cfg;
    cfg.size = 32;
    cfg.decode = m;
    auto ds = std::make_shared<ImageFolderDataset>(t.path.string(), cfg);
    LoaderConfig c;
    c.batch_size = 8;
    c.workers = workers;
    c.seed = 5;
    Loader l(ds, c);
    l.start_epoch(0, train_order(ds->size(), 5, 0, 0, 1));
    std::vector<std::vector<float>> out;
    Batch b;
    while (l.next(b)) out.emplace_back(b.images.f32(), b.images.f32() + b.images.numel());
    return out;
  };
  const auto want = batches(DecodeMode::Full, 1);
  ASSERT_EQ(want.size(), 3u);
  for (int w : {1, 3}) EXPECT_EQ(batches(DecodeMode::Crop, w), want) << w << " workers";
}

TEST(CropDecode, ParseMode) {
  EXPECT_EQ(parse_decode_mode("full"), DecodeMode::Full);
  EXPECT_EQ(parse_decode_mode("crop"), DecodeMode::Crop);
  try {
    parse_decode_mode("bogus");
    ADD_FAILURE() << "accepted bogus";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("bogus"), std::string::npos);
  }
}

}  // namespace
}  // namespace vt
