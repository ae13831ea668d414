// veval's PATH handling: image folders, ADM npz images and statistics npz
// give consistent statistics; bad inputs give errors that name the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <filesystem>
#include <functional>

#include <unistd.h>

#include <opencv2/imgcodecs.hpp>

#include "core/npz.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "eval/fid_inputs.h"

namespace fs = std::filesystem;

namespace vt {
namespace {

class FidInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("vt_fid_inputs_" + std::to_string(::getpid()));
    fs::create_directories(dir_ / "imgs" / "nested");
    // 4 random 20x24 RGB images as lossless PNGs (one in a sub-folder) and
    // the same pixels as an ADM-style arr_0.
    Philox rng(5, 0);
    std::vector<uint8_t> all;
    for (int i = 0; i < 4; ++i) {
      cv::Mat bgr(20, 24, CV_8UC3);
      std::vector<uint8_t> rgb(20 * 24 * 3);
      for (auto& v : rgb) v = static_cast<uint8_t>(rng.uniform() * 256);
      for (int y = 0; y < 20; ++y)
        for (int x = 0; x < 24; ++x)
          for (int c = 0; c < 3; ++c) bgr.at<cv::Vec3b>(y, x)[2 - c] = rgb[(y * 24 + x) * 3 + c];
      const fs::path p = dir_ / "imgs" / (i == 3 ? "nested/img3.png" : "img" + std::to_string(i) + ".png");
      ASSERT_TRUE(cv::imwrite(p.string(), bgr));
      all.insert(all.end(), rgb.begin(), rgb.end());
    }
    save_npz((dir_ / "images.npz").string(), {{"arr_0", NpyArray::from(all, {4, 20, 24, 3})}});
    net_ = std::make_unique<InceptionFid>(
        load_safetensors(std::string(VT_FIXTURES_DIR) + "/eval/inception_w16.safetensors"), "w16");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string p(const std::string& rel) const { return (dir_ / rel).string(); }

  fs::path dir_;
  std::unique_ptr<InceptionFid> net_;
};

TEST_F(FidInputs, FolderNpzAndStatsAgree) {
  FidSourceStats a = fid_source_stats(p("imgs"), net_.get(), 4);
  FidSourceStats b = fid_source_stats(p("images.npz"), net_.get(), 4);
  EXPECT_EQ(a.kind, FidSourceKind::ImageFolder);
  EXPECT_EQ(b.kind, FidSourceKind::ImageNpz);
  EXPECT_EQ(a.count, 4);
  EXPECT_EQ(b.count, 4);
  EXPECT_LE((a.stats.mu - b.stats.mu).cwiseAbs().maxCoeff(), 1e-5);
  EXPECT_LE((a.stats.sigma - b.stats.sigma).cwiseAbs().maxCoeff(), 1e-5);
  save_stats_npz(p("stats.npz"), a.stats);
  auto raw = load_npz(p("stats.npz"));
  EXPECT_EQ(raw.at("mu").dtype, "<f8");
  FidSourceStats c = fid_source_stats(p("stats.npz"), nullptr, 1);
  EXPECT_EQ(c.kind, FidSourceKind::StatsNpz);
  EXPECT_EQ((c.stats.sigma - a.stats.sigma).cwiseAbs().maxCoeff(), 0.0);
  // The image count travels with the statistics (veval prints it for a ref).
  EXPECT_EQ(raw.at("count").dtype, "<i8");
  EXPECT_EQ(c.count, 4);
  EXPECT_EQ(stored_count(p("stats.npz")), 4);
  // 4 samples in 128 dimensions: rank-3 covariances, so the square roots
  // of ~1e-16-relative eigenvalues leave O(1e-7) of the trace behind.
  EXPECT_NEAR(frechet_distance(a.stats, c.stats).fid, 0.0, 1e-5 * a.stats.sigma.trace());
}

TEST_F(FidInputs, ReferenceBatchWithStatisticsUsesThem) {
  // ADM reference batches carry arr_0 and mu/sigma; mu/sigma win, also in a
  // deflated archive (np.savez_compressed).
  std::vector<double> mu = {1, 2}, sigma = {2, 0.5, 0.5, 1};
  save_npz(p("ref.npz"),
           {{"arr_0", NpyArray::from(std::vector<uint8_t>(2 * 4 * 4 * 3, 7), {2, 4, 4, 3})},
            {"mu", NpyArray::from(mu, {2})},
            {"sigma", NpyArray::from(sigma, {2, 2})}},
           /*compress=*/true);
  EXPECT_EQ(classify_fid_source(p("ref.npz")), FidSourceKind::StatsNpz);
  FidSourceStats s = fid_source_stats(p("ref.npz"), nullptr, 1);
  EXPECT_EQ(s.stats.mu, Eigen::Vector2d(1, 2));
  EXPECT_EQ(s.stats.sigma(0, 1), 0.5);
  EXPECT_EQ(s.stats.sigma(1, 1), 1.0);
  EXPECT_EQ(s.count, 0);  // no "count" member: unknown, not "0 images"
}

void expect_error(const std::function<void()>& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no throw; wanted '" << needle << "'";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST_F(FidInputs, BadInputsNameTheProblem) {
  expect_error([&] { fid_source_stats(p("missing"), net_.get(), 4); }, "no such file");
  save_npz(p("keys.npz"), {{"foo", NpyArray::from(std::vector<float>{1, 2}, {2})}});
  expect_error([&] { fid_source_stats(p("keys.npz"), net_.get(), 4); }, "found keys foo");
  save_npz(p("f32.npz"), {{"arr_0", NpyArray::from(std::vector<float>(2 * 4 * 4 * 3), {2, 4, 4, 3})}});
  expect_error([&] { fid_source_stats(p("f32.npz"), net_.get(), 4); }, "expected uint8 [N, H, W, 3]");
  save_npz(p("one.npz"), {{"arr_0", NpyArray::from(std::vector<uint8_t>(8 * 8 * 3), {1, 8, 8, 3})}});
  expect_error([&] { fid_source_stats(p("one.npz"), net_.get(), 4); }, "at least 2 images");
  save_npz(p("ms.npz"), {{"mu", NpyArray::from(std::vector<double>(3), {3})},
                         {"sigma", NpyArray::from(std::vector<double>(4), {2, 2})}});
  expect_error([&] { fid_source_stats(p("ms.npz"), nullptr, 4); }, "must be [D] and [D, D]");
  for (double bad : {std::nan(""), HUGE_VAL}) {
    save_npz(p("nan.npz"), {{"mu", NpyArray::from(std::vector<double>{0, 1}, {2})},
                            {"sigma", NpyArray::from(std::vector<double>{1, 0, 0, bad}, {2, 2})}});
    expect_error([&] { fid_source_stats(p("nan.npz"), nullptr, 4); }, p("nan.npz") + "': sigma holds a non-finite");
  }
  // One good image and one that does not decode: the bad file is named, not
  // "found 1" (and not only when the count is already >= 2).
  fs::create_directories(dir_ / "half");
  fs::copy_file(dir_ / "imgs" / "img0.png", dir_ / "half" / "a.png");
  std::ofstream(dir_ / "half" / "b.png") << "not a png";
  expect_error([&] { fid_source_stats(p("half"), net_.get(), 4); }, "half/b.png");
  fs::remove(dir_ / "half" / "a.png");
  expect_error([&] { fid_source_stats(p("half"), net_.get(), 4); }, "half/b.png");  // was "found 1"
  fs::remove(dir_ / "half" / "b.png");
  fs::copy_file(dir_ / "imgs" / "img0.png", dir_ / "half" / "a.png");
  expect_error([&] { fid_source_stats(p("half"), net_.get(), 4); }, "at least 2 images, found 1");
  fs::create_directories(dir_ / "empty");
  expect_error([&] { fid_source_stats(p("empty"), net_.get(), 4); }, "no image files");
  expect_error([&] { find_inception_weights(p("nowhere.safetensors")); }, "tools/convert_inception.py");
}

}  // namespace
}  // namespace vt
