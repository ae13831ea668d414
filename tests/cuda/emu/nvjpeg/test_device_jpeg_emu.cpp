// The device JPEG decoder (data_pipeline/device/device_jpeg.h) and the
// device RandomResizedCrop (device_rrc.h) on the CUDA emulator, whose
// nvJPEG stand-in (tests/cuda/emu/nvjpeg_emu.cpp) decodes with the same
// libjpeg-turbo as the host decoder: every path must give the host path's
// pixels bit for bit, every image must come back (decoded, or with the host
// decoder's CorruptImage naming it), and each image's path must be the one
// the documentation gives for its kind, which the test reads from the
// file's own markers (not from the module).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include "core/cuda_stream.h"
#include "core/philox.h"
#include "data/data_test_util.h"
#include "data_pipeline/crop_decode.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/device/device_batch_decode.h"
#include "data_pipeline/device/device_jpeg.h"
#include "data_pipeline/device/device_rrc.h"
#include "data_pipeline/image_folder.h"
#include "data_pipeline/image_header.h"
#include "data_pipeline/resample.h"
#include "emu_streams.h"
#include "emu_trace.h"
#include "nvjpeg_emu.h"

namespace vt {
namespace {

struct File {
  std::string name;
  std::vector<uint8_t> bytes;
};

// The first start-of-frame marker's type (0xC0 baseline, 0xC1 extended,
// 0xC2 progressive, ...), or 0; the component count it declares and the
// first component's horizontal sampling factor (4: 4:1:1 or 4:1:0).
void read_sof(const std::vector<uint8_t>& b, int* sof, int* components, int* h0) {
  *sof = 0;
  *components = 0;
  *h0 = 0;
  size_t i = 2;
  while (i + 11 < b.size() && b[i] == 0xFF) {
    const int m = b[i + 1];
    const size_t len = (size_t(b[i + 2]) << 8) | b[i + 3];
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
      *sof = m;
      *components = b[i + 9];
      *h0 = b[i + 11] >> 4;
      return;
    }
    i += 2 + len;
  }
}

// The path device_jpeg.h documents for a file, from its bytes.
JpegDecodePath expected_path(const File& f, bool hardware) {
  if (sniff_format(f.bytes.data(), f.bytes.size()) != ImageFormat::Jpeg) return JpegDecodePath::Host;
  int sof = 0, comps = 0, h0 = 0;
  read_sof(f.bytes, &sof, &comps, &h0);
  if (comps != 1 && comps != 3) return JpegDecodePath::Host;  // CMYK / YCCK
  if (!hardware) return JpegDecodePath::NvjpegCuda;
  // The engines: baseline only, not 4:1:1 / 4:1:0.
  return sof == 0xC0 && h0 != 4 ? JpegDecodePath::NvjpegHardware : JpegDecodePath::Host;
}

cv::Mat to_host_mat(const Tensor& rgb) {
  const Tensor h = rgb.to(Device::cpu());
  cv::Mat m(static_cast<int>(h.shape()[0]), static_cast<int>(h.shape()[1]), CV_8UC3);
  std::memcpy(m.data, h.data<uint8_t>(), h.nbytes());
  return m;
}

bool same(const cv::Mat& a, const cv::Mat& b) {
  return a.size() == b.size() && a.type() == b.type() && cv::norm(a, b, cv::NORM_INF) == 0;
}

std::vector<EncodedImage> encoded(const std::vector<File>& files) {
  std::vector<EncodedImage> v;
  for (const File& f : files) v.push_back({f.bytes.data(), f.bytes.size(), f.name});
  return v;
}

// Synthetic files of every kind the paths distinguish, plus every 50th
// ImageNet sample read in place (photos, their grayscale and CMYK JPEGs and
// the PNG named .JPEG).
std::vector<File> test_files() {
  std::vector<File> files;
  const cv::Mat rgb = testutil::synthetic_rgb(300, 260, 3);
  auto tj = [&](int subsamp, int flags, int pf = TJPF_RGB) {
    tjhandle t = tjInitCompress();
    unsigned char* buf = nullptr;
    unsigned long size = 0;
    cv::Mat src = rgb;
    if (pf == TJPF_GRAY) cv::cvtColor(rgb, src, cv::COLOR_RGB2GRAY);
    EXPECT_EQ(tjCompress2(t, src.data, src.cols, static_cast<int>(src.step[0]), src.rows, pf, &buf, &size, subsamp,
                          90, flags),
              0);
    std::vector<uint8_t> out(buf, buf + size);
    tjFree(buf);
    tjDestroy(t);
    return out;
  };
  files.push_back({"ycc420.jpg", tj(TJSAMP_420, 0)});
  files.push_back({"ycc444.jpg", tj(TJSAMP_444, 0)});
  files.push_back({"gray.jpg", tj(TJSAMP_GRAY, 0, TJPF_GRAY)});
  files.push_back({"progressive.jpg", tj(TJSAMP_422, TJFLAG_PROGRESSIVE)});
  files.push_back({"ycc411.jpg", tj(TJSAMP_411, 0)});
  std::vector<uint8_t> cmyk(120 * 90 * 4);
  for (size_t i = 0; i < cmyk.size(); ++i) cmyk[i] = static_cast<uint8_t>(i * 7 % 251);
  files.push_back({"cmyk.jpg", testutil::encode_jpeg(cmyk.data(), 120, 90, TJPF_CMYK, 90)});
  cv::Mat bgr;
  cv::cvtColor(rgb, bgr, cv::COLOR_RGB2BGR);
  std::vector<uint8_t> png;
  cv::imencode(".png", bgr, png);
  files.push_back({"png_named.jpg", png});
  const std::string root = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  if (std::filesystem::exists(root)) {
    ImageFolder f(root);
    for (size_t i = 0; i < f.samples().size(); i += 50)
      files.push_back({f.samples()[i].path, read_file_bytes(f.samples()[i].path)});
  }
  return files;
}

class DeviceJpegEmu : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override { vt_emu_nvjpeg_set_hardware_present(GetParam()); }
  void TearDown() override { vt_emu_nvjpeg_set_hardware_present(true); }
};

// Every file's decode equals the host decoder's, on the path its kind gets.
TEST_P(DeviceJpegEmu, DecodeEqualsHostOnDocumentedPath) {
  const bool hw = GetParam();
  const std::vector<File> files = test_files();
  DeviceJpegDecoder dec(0);
  EXPECT_EQ(dec.hardware(), hw);
  vt_emu_nvjpeg_reset_counts();
  const std::vector<DeviceImage> out = dec.decode(encoded(files));
  ASSERT_EQ(out.size(), files.size());
  int to_nvjpeg = 0, host = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].name);
    ASSERT_FALSE(out[i].error);
    const JpegDecodePath want = expected_path(files[i], hw);
    EXPECT_EQ(out[i].path, want) << jpeg_decode_path_name(out[i].path);
    (want == JpegDecodePath::Host ? host : to_nvjpeg) += 1;
    const DecodedImage ref = decode_image(files[i].bytes.data(), files[i].bytes.size(), files[i].name);
    EXPECT_EQ(out[i].width, ref.full_width);
    EXPECT_EQ(out[i].height, ref.full_height);
    EXPECT_TRUE(same(to_host_mat(out[i].rgb), ref.rgb));
  }
  // The synthetic progressive, 4:1:1, CMYK and PNG files at least take the
  // host path on the hardware backend; the CMYK and PNG ones on the CUDA one.
  EXPECT_GE(host, hw ? 4 : 2);
  EXPECT_EQ(vt_emu_nvjpeg_counts().batched_images, to_nvjpeg);
  EXPECT_EQ(vt_emu_nvjpeg_counts().batched_calls, 1);
}

// Decode + RandomResizedCrop on the device equals the host path with
// data.dct_scaling off (decode_image at full size, resize_scaled_box), with
// the boxes drawn by rrc_box from the same Philox streams.
TEST_P(DeviceJpegEmu, RandomResizedCropEqualsHost) {
  const std::vector<File> files = test_files();
  const int S = 48;
  DeviceJpegDecoder dec(0);
  const std::vector<DeviceImage> imgs = dec.decode(encoded(files));
  std::vector<CropBox> boxes;
  for (size_t i = 0; i < files.size(); ++i) {
    const ImageSize sz = probe_image(files[i].bytes.data(), files[i].bytes.size(), files[i].name);
    Philox rng(7, i);
    boxes.push_back(rrc_box(sz.width, sz.height, rng));
  }
  const Tensor out = Tensor::empty({int64_t(files.size()), S, S, 3}, DType::U8, Device::cuda(0));
  device_crop_resize_batch(imgs, boxes, S, out);
  const Tensor host_out = out.to(Device::cpu());
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].name);
    const DecodedImage d = decode_image(files[i].bytes.data(), files[i].bytes.size(), files[i].name);
    Philox rng(7, i);
    const CropBox b = rrc_box(d.full_width, d.full_height, rng);
    ASSERT_EQ(b, boxes[i]);
    const cv::Mat ref = resize_scaled_box(d.rgb, 0, 0, d.full_width, d.full_height, d.rgb.cols, d.rgb.rows, b, S);
    const cv::Mat got(S, S, CV_8UC3, host_out.data<uint8_t>() + i * S * S * 3);
    EXPECT_TRUE(same(got, ref));
  }
}

INSTANTIATE_TEST_SUITE_P(Backend, DeviceJpegEmu, ::testing::Values(true, false),
                         [](const auto& p) { return p.param ? std::string("Hardware") : std::string("Cuda"); });

// Each branch of Pillow's pass plan on the device (copy, one pass either
// way, vertical first, horizontal first over the rows it needs) against
// resize_pil of the host crop.
TEST(DeviceRrcEmu, EveryPassOrderEqualsResizePil) {
  const cv::Mat rgb = testutil::synthetic_rgb(300, 260, 11);
  Tensor dev = Tensor::empty({260, 300, 3}, DType::U8, Device::cuda(0));
  dev.copy_from(Tensor::wrap(rgb.data, {260, 300, 3}, DType::U8));
  const int S = 64;
  const std::vector<CropBox> boxes = {{5, 7, 64, 64},    {0, 0, 200, 64},  {10, 3, 64, 200},
                                      {20, 30, 240, 90}, {1, 2, 90, 250},  {0, 0, 260, 300},
                                      {100, 100, 40, 30}};
  for (const CropBox& b : boxes) {
    SCOPED_TRACE(std::to_string(b.height) + "x" + std::to_string(b.width));
    const Tensor out = Tensor::empty({S, S, 3}, DType::U8, Device::cuda(0));
    device_crop_resize(dev, b, S, out);
    const cv::Mat ref = resize_pil(rgb(cv::Rect(b.left, b.top, b.width, b.height)).clone(), S, S,
                                   ResampleFilter::Bicubic);
    EXPECT_TRUE(same(to_host_mat(out), ref));
  }
  const Tensor out = Tensor::empty({S, S, 3}, DType::U8, Device::cuda(0));
  EXPECT_THROW(device_crop_resize(dev, {200, 0, 64, 64}, S, out), std::invalid_argument);  // past the bottom
}

// The batched form: every pass order in one call (two launches), from two
// images, into rows in another order with a row left alone; each row is
// resize_pil of its host crop, and the untouched row keeps its bytes.
TEST(DeviceRrcEmu, OneBatchOfEveryPassOrderEqualsResizePil) {
  const cv::Mat a = testutil::synthetic_rgb(300, 260, 11), b = testutil::synthetic_rgb(64, 64, 12);
  Tensor da = Tensor::empty({260, 300, 3}, DType::U8, Device::cuda(0));
  Tensor db = Tensor::empty({64, 64, 3}, DType::U8, Device::cuda(0));
  da.copy_from(Tensor::wrap(a.data, {260, 300, 3}, DType::U8));
  db.copy_from(Tensor::wrap(b.data, {64, 64, 3}, DType::U8));
  const int S = 64;
  const std::vector<CropBox> boxes = {{5, 7, 64, 64}, {0, 0, 200, 64}, {10, 3, 64, 200},
                                      {20, 30, 240, 90}, {1, 2, 90, 250}, {100, 100, 40, 30}};
  std::vector<DeviceCrop> crops;
  for (size_t i = 0; i < boxes.size(); ++i) crops.push_back({&da, boxes[i], static_cast<int64_t>(boxes.size() - i)});
  crops.push_back({&db, {0, 0, 64, 64}, 0});  // already S x S: the identity pass
  const int64_t N = static_cast<int64_t>(crops.size()) + 1;  // row N - 1 is left alone
  std::vector<uint8_t> fill(static_cast<size_t>(N * S * S * 3), 77);
  Tensor out = Tensor::empty({N, S, S, 3}, DType::U8, Device::cuda(0));
  out.copy_from(Tensor::wrap(fill.data(), {N, S, S, 3}, DType::U8));
  device_crop_resize_rows(crops, S, out);
  for (const DeviceCrop& c : crops) {
    const cv::Mat& src = c.rgb == &da ? a : b;
    const CropBox& x = c.box;
    SCOPED_TRACE("row " + std::to_string(c.row));
    const cv::Mat ref = resize_pil(src(cv::Rect(x.left, x.top, x.width, x.height)).clone(), S, S,
                                   ResampleFilter::Bicubic);
    EXPECT_TRUE(same(to_host_mat(out.select(0, c.row)), ref));
  }
  const Tensor last = out.select(0, N - 1).to(Device::cpu());
  EXPECT_TRUE(std::all_of(last.data<uint8_t>(), last.data<uint8_t>() + S * S * 3, [](uint8_t v) { return v == 77; }));
  EXPECT_THROW(device_crop_resize_rows({{&da, boxes[0], N}}, S, out), std::invalid_argument);  // row outside
}

// A corrupt JPEG gets the host decoder's CorruptImage naming it; the other
// images of its batch still decode (to the host's pixels), through nvJPEG.
TEST(DeviceJpegEmuErrors, CorruptJpegNamedNothingLost) {
  for (bool hw : {true, false}) {
    vt_emu_nvjpeg_set_hardware_present(hw);
    const cv::Mat rgb = testutil::synthetic_rgb(200, 150, 4);
    std::vector<File> files;
    files.push_back({"good_a.jpg", testutil::encode_rgb_jpeg(rgb)});
    std::vector<uint8_t> cut = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(200, 150, 5));
    cut.resize(cut.size() / 2);  // inside the entropy-coded data
    files.push_back({"truncated.jpg", cut});
    std::vector<uint8_t> junk = {0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0, 1, 2, 3, 4, 5, 6, 7};
    files.push_back({"junk.jpg", junk});
    files.push_back({"good_b.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(90, 120, 6))});
    // Stray bytes between the scan and its EOI (libjpeg's "extraneous bytes
    // before marker" warning, which the host decoder accepts as PIL does):
    // it passes the header checks and nvJPEG's batch call refuses it.
    std::vector<uint8_t> damaged = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(160, 120, 7));
    damaged.insert(damaged.end() - 2, 8, 0x55);
    files.push_back({"damaged.jpg", damaged});
    files.push_back({"good_c.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(70, 50, 8))});
    DeviceJpegDecoder dec(0);
    const std::vector<DeviceImage> out = dec.decode(encoded(files));
    ASSERT_EQ(out.size(), files.size());
    // The cut file has no EOI: straight to the host decoder, never to nvJPEG.
    EXPECT_EQ(out[1].path, JpegDecodePath::Host);
    for (size_t i : {size_t(1), size_t(2)}) {
      SCOPED_TRACE(files[i].name);
      ASSERT_TRUE(out[i].error);
      std::string want;
      try {
        decode_image(files[i].bytes.data(), files[i].bytes.size(), files[i].name);
      } catch (const CorruptImage& e) {
        want = e.what();
      }
      ASSERT_NE(want, "");
      try {
        std::rethrow_exception(out[i].error);
      } catch (const CorruptImage& e) {
        EXPECT_EQ(std::string(e.what()), want);
        EXPECT_NE(std::string(e.what()).find(files[i].name), std::string::npos);
      }
    }
    // The refused batch call is split down to the damaged file, which the
    // host decodes; the good files of the call still come from nvJPEG.
    EXPECT_EQ(out[4].path, JpegDecodePath::Host);
    for (size_t i : {size_t(0), size_t(3), size_t(4), size_t(5)}) {
      SCOPED_TRACE(files[i].name);
      ASSERT_FALSE(out[i].error);
      if (i != 4) EXPECT_NE(out[i].path, JpegDecodePath::Host);
      const DecodedImage ref = decode_image(files[i].bytes.data(), files[i].bytes.size(), files[i].name);
      EXPECT_TRUE(same(to_host_mat(out[i].rgb), ref.rgb));
    }
    EXPECT_THROW(rethrow_first_error(out), CorruptImage);
    const Tensor o = Tensor::empty({6, 16, 16, 3}, DType::U8, Device::cuda(0));
    EXPECT_THROW(device_crop_resize_batch(out, std::vector<CropBox>(6, CropBox{0, 0, 16, 16}), 16, o), CorruptImage);
  }
  vt_emu_nvjpeg_set_hardware_present(true);
}

// Without JPEG engines the decoder says so and uses the CUDA backend.
TEST(DeviceJpegEmuErrors, NoEnginesMeansCudaBackend) {
  vt_emu_nvjpeg_set_hardware_present(false);
  EXPECT_FALSE(DeviceJpegDecoder(0).hardware());
  vt_emu_nvjpeg_set_hardware_present(true);
  EXPECT_TRUE(DeviceJpegDecoder(0).hardware());
  EXPECT_FALSE(DeviceJpegDecoder(0, /*allow_hardware=*/false).hardware());
}

// ---------------------------------------------------------------- nvJPEG failures

// FNV-1a, 64 bits, of a file's bytes: the hash the stand-in's
// VT_EMU_NVJPEG_FAIL names files by (its published definition, written
// out here rather than taken from the stand-in).
std::string fnv1a_hex(const std::vector<uint8_t>& b) {
  uint64_t h = 14695981039346656037ull;
  for (uint8_t c : b) h = (h ^ c) * 1099511628211ull;
  char s[17];
  std::snprintf(s, sizeof s, "%016llx", static_cast<unsigned long long>(h));
  return s;
}

// Sets environment variables for its lifetime (the stand-in reads its
// failure knobs when a decoder creates its handle).
struct ScopedEnv {
  std::vector<std::string> names;
  ScopedEnv(std::initializer_list<std::pair<const char*, std::string>> vars) {
    for (const auto& [n, v] : vars) {
      setenv(n, v.c_str(), 1);
      names.push_back(n);
    }
  }
  ~ScopedEnv() {
    for (const std::string& n : names) unsetenv(n.c_str());
  }
};

std::vector<File> good_and_target() {
  std::vector<File> files;
  files.push_back({"good_a.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(200, 150, 4))});
  files.push_back({"target.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(120, 90, 5))});
  files.push_back({"good_b.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(90, 120, 6))});
  files.push_back({"good_c.jpg", testutil::encode_rgb_jpeg(testutil::synthetic_rgb(70, 50, 8))});
  return files;
}

// Each status real nvJPEG returns for particular decodable files
// (EXECUTION_FAILED: DALI#3160; INVALID_PARAMETER: DALI#3159;
// INTERNAL_ERROR: nvImageCodec#55), on either backend: the file is decoded
// on the host (the host decoder's pixels, marked nvjpeg_failed), the other
// files of the batch still by nvJPEG, and nothing is thrown.
TEST(DeviceJpegEmuFailures, FailedFileDecodedOnTheHostPerStatus) {
  for (const char* status : {"execution", "invalid", "internal"}) {
    for (bool hw : {true, false}) {
      SCOPED_TRACE(std::string(status) + (hw ? " hardware" : " cuda"));
      vt_emu_nvjpeg_set_hardware_present(hw);
      const std::vector<File> files = good_and_target();
      ScopedEnv env({{"VT_EMU_NVJPEG_FAIL", std::string(status) + ":" + fnv1a_hex(files[1].bytes)}});
      DeviceJpegDecoder dec(0);
      vt_emu_nvjpeg_reset_counts();
      std::vector<DeviceImage> out;
      ASSERT_NO_THROW(out = dec.decode(encoded(files)));
      ASSERT_EQ(out.size(), files.size());
      EXPECT_GE(vt_emu_nvjpeg_counts().injected_failures, 1);
      for (size_t i = 0; i < files.size(); ++i) {
        SCOPED_TRACE(files[i].name);
        ASSERT_FALSE(out[i].error);
        EXPECT_EQ(out[i].nvjpeg_failed, i == 1);
        EXPECT_EQ(out[i].path == JpegDecodePath::Host, i == 1) << jpeg_decode_path_name(out[i].path);
        const DecodedImage ref = decode_image(files[i].bytes.data(), files[i].bytes.size(), files[i].name);
        EXPECT_TRUE(same(to_host_mat(out[i].rgb), ref.rgb));
      }
      // The decoder goes on: the next batch (the same files) decodes the same way.
      const std::vector<DeviceImage> again = dec.decode(encoded(files));
      EXPECT_TRUE(again[1].nvjpeg_failed);
      EXPECT_FALSE(again[0].nvjpeg_failed);
    }
  }
  vt_emu_nvjpeg_set_hardware_present(true);
}

// VT_EMU_NVJPEG_FAIL's %N form over every 50th ImageNet sample: exactly the
// files whose hash is 0 mod 3 (counted here from their bytes) are decoded
// on the host after the failure, every image equal to the host decoder's.
TEST(DeviceJpegEmuFailures, EveryFileOfAHashClassDecodedOnTheHost) {
  const std::vector<File> files = test_files();
  ScopedEnv env({{"VT_EMU_NVJPEG_FAIL", "execution:%3"}});
  DeviceJpegDecoder dec(0);
  const std::vector<DeviceImage> out = dec.decode(encoded(files));
  int want = 0, got = 0;
  for (size_t i = 0; i < files.size(); ++i) {
    SCOPED_TRACE(files[i].name);
    ASSERT_FALSE(out[i].error);
    // Only what reaches nvjpegDecodeBatched can fail there.
    const bool to_nvjpeg = expected_path(files[i], dec.hardware()) != JpegDecodePath::Host;
    const bool hit = to_nvjpeg && std::stoull(fnv1a_hex(files[i].bytes), nullptr, 16) % 3 == 0;
    want += hit;
    got += out[i].nvjpeg_failed;
    EXPECT_EQ(out[i].nvjpeg_failed, hit);
    const DecodedImage ref = decode_image(files[i].bytes.data(), files[i].bytes.size(), files[i].name);
    EXPECT_TRUE(same(to_host_mat(out[i].rgb), ref.rgb));
  }
  EXPECT_EQ(got, want);
  if (files.size() > 20) EXPECT_GT(want, 0);  // with the ImageNet samples some file is hit
}

// A failure that is the device's (VT_EMU_NVJPEG_FAIL_STICKY: from the
// failing call on, nvJPEG fails everything, the known-good JPEG too):
// decode throws, naming the file, its status and that a known-good JPEG
// fails as well; and so does every later batch.
TEST(DeviceJpegEmuFailures, StickyFailureStopsNamingTheFileAndStatus) {
  for (bool hw : {true, false}) {
    SCOPED_TRACE(hw ? "hardware" : "cuda");
    vt_emu_nvjpeg_set_hardware_present(hw);
    const std::vector<File> files = good_and_target();
    ScopedEnv env({{"VT_EMU_NVJPEG_FAIL", "execution:" + fnv1a_hex(files[1].bytes)},
                   {"VT_EMU_NVJPEG_FAIL_STICKY", "1"}});
    DeviceJpegDecoder dec(0);
    std::vector<File> good = {files[0], files[2]};
    ASSERT_NO_THROW(dec.decode(encoded(good)));  // nothing fails before the target
    try {
      dec.decode(encoded(files));
      FAIL() << "a lost device did not stop the decoder";
    } catch (const std::runtime_error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("target.jpg"), std::string::npos) << m;
      EXPECT_NE(m.find("NVJPEG_STATUS_EXECUTION_FAILED"), std::string::npos) << m;
      EXPECT_NE(m.find("known-good"), std::string::npos) << m;
    }
    EXPECT_THROW(dec.decode(encoded(good)), std::runtime_error);
  }
  vt_emu_nvjpeg_set_hardware_present(true);
}

// A malformed knob is refused naming the variable and the value.
TEST(DeviceJpegEmuFailures, MalformedKnobRefused) {
  for (const char* v : {"boom:0123456789abcdef", "execution:12", "invalid:%0", "internal"}) {
    ScopedEnv env({{"VT_EMU_NVJPEG_FAIL", v}});
    try {
      DeviceJpegDecoder dec(0);
      FAIL() << v << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("VT_EMU_NVJPEG_FAIL='") + v + "'"), std::string::npos)
          << e.what();
    }
  }
  ScopedEnv env({{"VT_EMU_NVJPEG_FAIL_STICKY", "yes"}});
  EXPECT_THROW(DeviceJpegDecoder(0), std::invalid_argument);
}

// The handle's allocations padded to 16 MiB (DALI's nvJPEG decoder's default
// device_memory_padding and host_memory_padding), and the hardware
// backend's supported check reads the header only
// (nvjpegJpegStreamParseHeader), never the whole stream.
TEST(DeviceJpegEmuFailures, PaddedBuffersAndHeaderOnlyParse) {
  vt_emu_nvjpeg_set_hardware_present(true);
  DeviceJpegDecoder dec(0);
  size_t device = 0, pinned = 0;
  vt_emu_nvjpeg_last_paddings(&device, &pinned);
  EXPECT_EQ(device, size_t(16) << 20);
  EXPECT_EQ(pinned, size_t(16) << 20);
  vt_emu_nvjpeg_reset_counts();
  const std::vector<File> files = good_and_target();
  dec.decode(encoded(files));
  EXPECT_EQ(vt_emu_nvjpeg_counts().full_parses, 0);
  EXPECT_EQ(vt_emu_nvjpeg_counts().header_parses, static_cast<long long>(files.size()));
}

// The marker reading the loader's workers ask (nvjpeg_header_takes) gives
// the path the documentation gives each file (expected_path, from the
// test's own reading of the SOF marker), on either backend; a JPEG cut
// short (no EOI) is the host decoder's.
TEST(DeviceJpegEmuFailures, HeaderPredicateGivesTheDocumentedPath) {
  std::vector<File> files = test_files();
  std::vector<uint8_t> cut = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(200, 150, 5));
  cut.resize(cut.size() / 2);
  for (bool hw : {true, false}) {
    for (const File& f : files) {
      SCOPED_TRACE(f.name + (hw ? " hardware" : " cuda"));
      EXPECT_EQ(nvjpeg_header_takes(f.bytes.data(), f.bytes.size(), hw),
                expected_path(f, hw) != JpegDecodePath::Host);
    }
    EXPECT_FALSE(nvjpeg_header_takes(cut.data(), cut.size(), hw));
  }
}

// Each nvjpegDecodeBatched call is followed by an event recorded on the
// decode's stream, which the next use of the same decode state waits for
// (the decode is asynchronous and reads the state's buffers): as many
// records as calls, also when a failure splits the batch, and one more for
// the page-locked block the host-decoded target went up from
// (core/pinned_staging.h).
TEST(DeviceJpegEmuFailures, EveryDecodeCallRecordsTheEventItsStateWaitsFor) {
  const std::vector<File> files = good_and_target();
  ScopedEnv env({{"VT_EMU_NVJPEG_FAIL", "execution:" + fnv1a_hex(files[1].bytes)}});
  DeviceJpegDecoder dec(0);
  for (int round = 0; round < 2; ++round) {
    std::vector<VtEmuAsyncOp> trace;
    vt_emu_nvjpeg_reset_counts();
    vt_emu_trace_async(&trace);
    dec.decode(encoded(files));
    vt_emu_trace_async(nullptr);
    long long records = 0;
    for (const VtEmuAsyncOp& op : trace) records += op.kind == VtEmuAsyncOp::Record;
    // The batch, its halves, the target alone, and the known-good reference.
    EXPECT_GE(vt_emu_nvjpeg_counts().batched_calls, 4);
    EXPECT_EQ(records, vt_emu_nvjpeg_counts().batched_calls + 1);
  }
}

// The caching allocator's steady state on the device decode path
// (core/allocator.h): 50 batches of 8 ImageNet samples drawn at random, so
// that every batch's sizes differ (each decoded image is a H x W x 3 block,
// the batch's resample slab and descriptor workspace follow its crops),
// decoded and cropped by DeviceBatchDecoder as the uploader's hook does,
// into one batch tensor. After a warm-up of a few batches no batch calls
// cudaMalloc: the cache's free blocks are split and merged to serve sizes
// it has not seen. (An exact-size cache calls cudaMalloc for nearly every
// new image size, so in nearly every batch: 208 calls in 49 of these 50.)
// The warm-up's length is measured, not derived: over 13 seeds of `pick`
// the cache made 4 cudaMalloc calls, the last in batch 4 at the latest.
TEST(DeviceJpegEmuAllocator, RandomBatchesReachASteadyStateWithoutCudaMalloc) {
  const std::string root = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  if (!std::filesystem::exists(root)) GTEST_SKIP() << root << " missing";
  const ImageFolder folder(root);
  const int64_t n = static_cast<int64_t>(folder.samples().size());
  constexpr int kBatches = 50, kBatch = 8, kWarmup = 5, S = 32;
  DeviceBatchDecoder dec(0);
  const Tensor out = Tensor::empty({kBatch, S, S, 3}, DType::U8, Device::cuda(0));
  Philox pick(2024, 0);
  std::vector<size_t> mallocs;
  std::set<int64_t> sizes;  // the distinct decoded image sizes (bytes)
  for (int b = 0; b < kBatches; ++b) {
    Batch batch;
    for (int i = 0; i < kBatch; ++i) {
      const std::string& path = folder.samples()[static_cast<size_t>(pick.integer(0, n - 1))].path;
      EncodedSample e;
      e.owned = read_file_bytes(path);
      e.data = e.owned.data();
      e.size = e.owned.size();
      e.name = path;
      const ImageSize sz = probe_image(e.data, e.size, path);
      sizes.insert(int64_t(sz.width) * sz.height * 3);
      Philox rng(77, static_cast<uint64_t>(b * kBatch + i));
      e.box = rrc_box(sz.width, sz.height, rng);
      batch.encoded.push_back(std::move(e));
    }
    const size_t before = vt_emu_malloc_count();
    dec.decode(batch, out, [](Batch&, int, std::exception_ptr e) { std::rethrow_exception(e); });
    mallocs.push_back(vt_emu_malloc_count() - before);
  }
  EXPECT_GT(sizes.size(), size_t(kBatches));  // the sizes do vary
  std::string per_batch;
  for (size_t m : mallocs) per_batch += std::to_string(m) + " ";
  for (int b = kWarmup; b < kBatches; ++b) EXPECT_EQ(mallocs[static_cast<size_t>(b)], 0u) << "batch " << b << "; cudaMalloc calls per batch: " << per_batch;
  std::printf("cudaMalloc calls per batch: %s\n", per_batch.c_str());
}

// A decode given a stream (the batch uploader's upload stream) queues all
// its work there: nvJPEG's decode, the host-decoded images' uploads (from
// page-locked staging, never pageable memory) and the crops, so the compute
// stream has nothing of it queued (under VT_EMU_STREAMS=delayed nothing
// runs before a wait, so a piece queued there would leave it busy), and
// three batches back to back never reuse a decode state whose decode is
// still queued (the stand-in refuses that). The images equal the host
// decoder's once that stream has run.
TEST(DeviceJpegEmuStreams, DecodeRunsOnTheGivenStreamOnly) {
  vt_emu_nvjpeg_set_hardware_present(true);
  const std::vector<File> files = test_files();
  DeviceJpegDecoder dec(0);
  CudaStream s = CudaStream::create(0);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  vt_emu_nvjpeg_reset_counts();
  const size_t pageable = vt_emu_pageable_h2d_count();
  std::vector<std::vector<DeviceImage>> rounds;
  for (int r = 0; r < 3; ++r) rounds.push_back(dec.decode(encoded(files), s.handle()));
  EXPECT_EQ(cudaStreamQuery(cudaStreamPerThread), cudaSuccess) << "the decode queued work on the compute stream";
  EXPECT_EQ(vt_emu_nvjpeg_counts().last_stream, s.handle());
  EXPECT_EQ(vt_emu_nvjpeg_counts().states_reused_in_flight, 0);
  EXPECT_EQ(vt_emu_pageable_h2d_count(), pageable) << "a host-decoded image went up from pageable memory";
  s.synchronize();
  int host = 0;
  for (const std::vector<DeviceImage>& out : rounds) {
    ASSERT_EQ(out.size(), files.size());
    for (size_t i = 0; i < files.size(); ++i) {
      SCOPED_TRACE(files[i].name);
      ASSERT_FALSE(out[i].error);
      host += out[i].path == JpegDecodePath::Host;
      const DecodedImage ref = decode_image(files[i].bytes.data(), files[i].bytes.size(), files[i].name);
      EXPECT_TRUE(same(to_host_mat(out[i].rgb), ref.rgb));
    }
  }
  EXPECT_GE(host, 3 * 4);  // progressive, 4:1:1, CMYK and PNG at least: the staged uploads were exercised
}

// The same for the batch decoder (decode + crops into the batch's rows):
// nothing on the compute stream, and the rows equal a decode on the
// compute stream.
TEST(DeviceJpegEmuStreams, BatchDecodeRunsOnTheGivenStreamOnly) {
  const std::vector<File> files = test_files();
  constexpr int S = 40;
  Batch batch;
  for (size_t i = 0; i < files.size(); ++i) {
    EncodedSample e;
    e.data = files[i].bytes.data();
    e.size = files[i].bytes.size();
    e.name = files[i].name;
    const ImageSize sz = probe_image(e.data, e.size, e.name);
    Philox rng(5, i);
    e.box = rrc_box(sz.width, sz.height, rng);
    batch.encoded.push_back(std::move(e));
  }
  const int64_t B = static_cast<int64_t>(files.size());
  const auto rethrow = [](Batch&, int, std::exception_ptr e) { std::rethrow_exception(e); };
  DeviceBatchDecoder on_compute(0), on_stream(0);
  const Tensor want = Tensor::empty({B, S, S, 3}, DType::U8, Device::cuda(0));
  on_compute.decode(batch, want, rethrow);
  CudaStream s = CudaStream::create(0);
  const Tensor got = cuda_empty_on({B, S, S, 3}, DType::U8, 0, s.handle());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  vt_emu_nvjpeg_reset_counts();
  on_stream.decode(batch, got, rethrow, s.handle());
  EXPECT_EQ(cudaStreamQuery(cudaStreamPerThread), cudaSuccess) << "the decode queued work on the compute stream";
  EXPECT_EQ(vt_emu_nvjpeg_counts().last_stream, s.handle());
  s.synchronize();
  const Tensor a = want.to(Device::cpu()), b = got.to(Device::cpu());
  EXPECT_EQ(std::memcmp(a.data<uint8_t>(), b.data<uint8_t>(), a.nbytes()), 0);
}

// The stand-in's rule (nvjpeg_emu.cpp): a decode state whose decode is
// still queued on its stream is not initialised or decoded with again.
// Only the delayed order keeps a decode queued until a wait.
TEST(DeviceJpegEmuStreams, StandInRefusesAStateWhoseDecodeIsQueued) {
  if (vt_emu::stream_mode() != vt_emu::StreamMode::Delayed)
    GTEST_SKIP() << "needs VT_EMU_STREAMS=delayed (emu.device_jpeg_streams_delayed runs it)";
  nvjpegHandle_t h = nullptr;
  ASSERT_EQ(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &h), NVJPEG_STATUS_SUCCESS);
  nvjpegJpegState_t st = nullptr;
  ASSERT_EQ(nvjpegJpegStateCreate(h, &st), NVJPEG_STATUS_SUCCESS);
  const std::vector<uint8_t> jpeg = testutil::encode_rgb_jpeg(testutil::synthetic_rgb(64, 48, 1));
  CudaStream s = CudaStream::create(0);
  const Tensor dst = cuda_empty_on({48, 64, 3}, DType::U8, 0, s.handle());
  nvjpegImage_t img{};
  img.channel[0] = dst.data<uint8_t>();
  img.pitch[0] = 64 * 3;
  const unsigned char* data = jpeg.data();
  const size_t length = jpeg.size();
  const auto stream = static_cast<cudaStream_t>(s.handle());
  vt_emu_nvjpeg_reset_counts();
  ASSERT_EQ(nvjpegDecodeBatchedInitialize(h, st, 1, 1, NVJPEG_OUTPUT_RGBI), NVJPEG_STATUS_SUCCESS);
  ASSERT_EQ(nvjpegDecodeBatched(h, st, &data, &length, &img, stream), NVJPEG_STATUS_SUCCESS);
  EXPECT_EQ(nvjpegDecodeBatchedInitialize(h, st, 1, 1, NVJPEG_OUTPUT_RGBI), NVJPEG_STATUS_INVALID_PARAMETER);
  EXPECT_EQ(nvjpegDecodeBatched(h, st, &data, &length, &img, stream), NVJPEG_STATUS_INVALID_PARAMETER);
  EXPECT_EQ(vt_emu_nvjpeg_counts().states_reused_in_flight, 2);
  s.synchronize();
  EXPECT_EQ(nvjpegDecodeBatchedInitialize(h, st, 1, 1, NVJPEG_OUTPUT_RGBI), NVJPEG_STATUS_SUCCESS);
  EXPECT_EQ(nvjpegDecodeBatched(h, st, &data, &length, &img, stream), NVJPEG_STATUS_SUCCESS);
  s.synchronize();
  nvjpegJpegStateDestroy(st);
  nvjpegDestroy(h);
}

}  // namespace
}  // namespace vt
