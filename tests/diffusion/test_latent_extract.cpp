// The latent pipeline around the VAE, on the committed narrow AutoencoderKL
// fixture (tools/vae_fixture.py): `dittrain extract` shards (ADM crops as
// DiT's center_crop_arr, posteriors equal to encoding those crops, resume
// after a lost shard, bad images per on_corrupt), posterior sampling in
// LatentShardDataset, and decoding of latent samples to an ADM .npz.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>

#include "core/npz.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/transforms.h"
#include "diffusion/image_grid.h"
#include "diffusion/latent_extract.h"
#include "diffusion/vae_decode_samples.h"
#include "diffusion/extract_test_util.h"
#include "test_fs.h"

namespace vt {
namespace {
namespace fs = std::filesystem;
using vt_test::error_of;

using vt_test::first_file;
using vt_test::make_sample_folder;
using vt_test::extract_options;
const std::string& kVae = vt_test::kNarrowVae;
const std::string& kSamples = vt_test::kImagenetSamples;
const auto& kClasses = vt_test::kFixtureClasses;  // the fixture's images, in its order

TEST(LatentExtract, AdmCropMatchesDiTCenterCropArr) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing";
  // tools/vae_fixture.py stored PIL's center_crop_arr crops of these files.
  const Tensor crops = load_safetensors(kVae + "/io.safetensors").at("crops");
  for (int i = 0; i < 2; ++i) {
    const std::vector<uint8_t> bytes = read_file_bytes(first_file(kSamples + "/" + kClasses[i]));
    const cv::Mat img = adm_center_crop(decode_image(bytes.data(), bytes.size(), "x").rgb, 64);
    ASSERT_TRUE(img.isContinuous());
    const uint8_t* want = crops.data<uint8_t>() + i * 64 * 64 * 3;
    int worst = 0;
    for (int k = 0; k < 64 * 64 * 3; ++k) worst = std::max(worst, std::abs(int(img.data[k]) - int(want[k])));
    EXPECT_EQ(worst, 0) << kClasses[i];
  }
}

TEST(LatentExtract, ShardsHoldThePosteriorOfTheAdmCrops) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing";
  vt_test::TmpDir tmp;
  const AutoencoderKL vae = AutoencoderKL::load(kVae);
  ExtractOptions o = extract_options(make_sample_folder(tmp, 2), tmp.path() + "/lat");
  o.hflip_copies = true;
  const ExtractReport r = extract_latents(vae, o);
  EXPECT_EQ(r.shards_written, 1);
  EXPECT_EQ(r.rows, 4);
  SafetensorsReader shard(tmp.path() + "/lat/shard_00000.safetensors");
  const Tensor post = shard.load("posterior"), labels = shard.load("labels");
  ASSERT_EQ(post.shape(), (Shape{4, 8, 8, 8}));
  // Folder order is class-sorted: n01440764 (label 0), n01443537 (label 1);
  // the fixture's images are [n01443537, n01440764].
  EXPECT_EQ(labels.data<int64_t>()[0], 0);
  EXPECT_EQ(labels.data<int64_t>()[1], 0);
  EXPECT_EQ(labels.data<int64_t>()[2], 1);
  const auto io = load_safetensors(kVae + "/io.safetensors");
  const Tensor mean_py = io.at("mean"), logvar_py = io.at("logvar");
  const int64_t lat = 4 * 8 * 8;
  for (int row : {0, 2}) {
    const int fixture_row = row == 0 ? 1 : 0;
    for (int64_t j = 0; j < lat; ++j) {
      const float m = post.f32()[row * 2 * lat + j], lv = post.f32()[row * 2 * lat + lat + j];
      const float wm = mean_py.f32()[fixture_row * lat + j], wl = logvar_py.f32()[fixture_row * lat + j];
      ASSERT_NEAR(m, wm, 1e-4 * (std::fabs(wm) + 1)) << "mean row " << row << " at " << j;
      ASSERT_NEAR(lv, wl, 1e-4 * (std::fabs(wl) + 1)) << "logvar row " << row << " at " << j;
    }
  }
  // Row 1 is the mirror of row 0: its posterior is the encoding of the flipped crop.
  const Tensor img = io.at("images").slice(0, 1, 2).contiguous();
  Tensor flipped = Tensor::empty(img.shape());
  for (int64_t p = 0; p < 3 * 64; ++p)
    for (int64_t x = 0; x < 64; ++x) flipped.f32()[p * 64 + x] = img.f32()[p * 64 + 63 - x];
  const Tensor fm = vae.encode(flipped).mean;
  for (int64_t j = 0; j < lat; ++j) ASSERT_NEAR(post.f32()[2 * lat + j], fm.f32()[j], 1e-4 * (std::fabs(fm.f32()[j]) + 1));
  EXPECT_EQ(shard.metadata().at("store"), "posterior");
}

TEST(LatentExtract, ResumesAfterALostShardAndRefusesOtherOptions) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing";
  vt_test::TmpDir tmp;
  const AutoencoderKL vae = AutoencoderKL::load(kVae);
  ExtractOptions o = extract_options(make_sample_folder(tmp, 3), tmp.path() + "/lat");
  o.shard_size = 1;
  o.store_posterior = false;  // pre-drawn samples: deterministic per (seed, shard, row)
  EXPECT_EQ(extract_latents(vae, o).shards_written, 3);
  const std::string s1 = tmp.path() + "/lat/shard_00001.safetensors";
  const std::vector<float> before = load_safetensors(s1).at("latents").to_vector();
  fs::remove(s1);
  const ExtractReport again = extract_latents(vae, o);
  EXPECT_EQ(again.shards_written, 1);
  EXPECT_EQ(again.shards_skipped, 2);
  EXPECT_EQ(load_safetensors(s1).at("latents").to_vector(), before);
  o.store_posterior = true;
  const std::string msg = error_of([&] { extract_latents(vae, o); });
  EXPECT_NE(msg.find("shard_00000.safetensors"), std::string::npos) << msg;
  EXPECT_NE(msg.find("store"), std::string::npos) << msg;
}

// A copy of the fixture VAE's folder at `dir`, with the last byte of its
// weights changed when `alter` (other weights, same path layout and shapes).
std::string copy_vae(const std::string& dir, bool alter) {
  fs::create_directories(dir);
  for (const char* f : {"config.json", "diffusion_pytorch_model.safetensors"}) fs::copy_file(kVae + "/" + f, dir + "/" + f);
  if (alter) {
    std::fstream w(dir + "/diffusion_pytorch_model.safetensors", std::ios::in | std::ios::out | std::ios::binary);
    w.seekg(-1, std::ios::end);
    const char c = static_cast<char>(w.get() ^ 0x01);
    w.seekp(-1, std::ios::end);
    w.put(c);
  }
  return dir;
}

TEST(LatentExtract, ResumeRefusesAnotherVaesWeights) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing";
  vt_test::TmpDir tmp;
  const AutoencoderKL vae = AutoencoderKL::load(kVae);
  ExtractOptions o = extract_options(make_sample_folder(tmp, 2), tmp.path() + "/lat");
  o.shard_size = 1;
  EXPECT_EQ(extract_latents(vae, o).shards_written, 2);
  // The same weights under another path resume (the fingerprint, not the path, decides).
  o.vae_source = copy_vae(tmp.path() + "/same_vae", false);
  const ExtractReport same = extract_latents(vae, o);
  EXPECT_EQ(same.shards_skipped, 2);
  EXPECT_EQ(same.rows, 0);
  EXPECT_EQ(same.total_rows(), 2);  // the summary counts the rows already there
  // One changed weight byte: refused, naming out= and the key.
  o.vae_source = copy_vae(tmp.path() + "/other_vae", true);
  const std::string msg = error_of([&] { extract_latents(vae, o); });
  EXPECT_NE(msg.find("out=" + o.out_dir), std::string::npos) << msg;
  EXPECT_NE(msg.find("vae_sha256"), std::string::npos) << msg;
}

TEST(LatentExtract, ResumeRefusesOtherImages) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing";
  vt_test::TmpDir tmp;
  const AutoencoderKL vae = AutoencoderKL::load(kVae);
  const std::string images = make_sample_folder(tmp, 2);
  ExtractOptions o = extract_options(images, tmp.path() + "/lat");
  EXPECT_EQ(extract_latents(vae, o).shards_written, 1);
  // The same count and shard_size, one file renamed: other images.
  const std::string cls = images + "/" + kClasses[1];
  const std::string f = first_file(cls);
  fs::rename(f, cls + "/renamed.JPEG");
  std::string msg = error_of([&] { extract_latents(vae, o); });
  EXPECT_NE(msg.find("out=" + o.out_dir), std::string::npos) << msg;
  EXPECT_NE(msg.find("images_sha256"), std::string::npos) << msg;
  fs::rename(cls + "/renamed.JPEG", f);
  // The same names under another root: also refused, naming the root.
  fs::copy(images, tmp.path() + "/images2", fs::copy_options::recursive);
  o.images_dir = tmp.path() + "/images2";
  msg = error_of([&] { extract_latents(vae, o); });
  EXPECT_NE(msg.find("images_root"), std::string::npos) << msg;
}

TEST(LatentExtract, MoreClassFoldersThanModelNumClassesIsAnError) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing";
  vt_test::TmpDir tmp;
  const AutoencoderKL vae = AutoencoderKL::load(kVae);
  ExtractOptions o = extract_options(make_sample_folder(tmp, 3), tmp.path() + "/lat");
  o.num_classes = 2;
  const std::string msg = error_of([&] { extract_latents(vae, o); });
  EXPECT_NE(msg.find("model.num_classes"), std::string::npos) << msg;
  EXPECT_FALSE(fs::exists(o.out_dir + "/shard_00000.safetensors"));
  o.num_classes = 3;
  EXPECT_EQ(extract_latents(vae, o).rows, 3);
}

TEST(LatentExtract, BadImagesFollowOnCorruptAndSmallImagesAreUpsampled) {
  if (!fs::is_directory(kSamples)) GTEST_SKIP() << kSamples << " missing";
  vt_test::TmpDir tmp;
  const AutoencoderKL vae = AutoencoderKL::load(kVae);
  const std::string root = make_sample_folder(tmp, 1);
  // 90x40 is below the crop 64: DiT's center_crop_arr upsamples it, so it is
  // kept (it used to be rejected).
  const std::string small = root + "/" + kClasses[0] + "/small.png";
  const std::string broken = root + "/" + kClasses[0] + "/zz_broken.jpg";
  cv::imwrite(small, cv::Mat(40, 90, CV_8UC3, cv::Scalar(10, 20, 30)));
  std::ofstream(broken) << "\xFF\xD8\xFF not really a jpeg";
  ExtractOptions o = extract_options(root, tmp.path() + "/lat");
  const std::string msg = error_of([&] { extract_latents(vae, o); });
  EXPECT_NE(msg.find("zz_broken.jpg"), std::string::npos) << msg;
  o.on_corrupt = "skip";
  const ExtractReport r = extract_latents(vae, o);
  EXPECT_EQ(r.bad_images, 1);
  EXPECT_EQ(r.rows, 2);
}

TEST(LatentShards, PosteriorShardsDrawAFreshSamplePerLoad) {
  vt_test::TmpDir tmp;
  // One row, C = 2, 1 x 3: mean and logvar chosen per element.
  const std::vector<float> mean = {0.5f, -1.f, 2.f, 0.f, 3.f, -0.25f};
  const std::vector<float> logvar = {0.f, -2.f, 1.f, -30.f, 0.5f, -1.f};
  std::vector<float> post(mean);
  post.insert(post.end(), logvar.begin(), logvar.end());
  save_safetensors(tmp.file("s.safetensors"), {{"posterior", Tensor::from_vector(post, {1, 4, 1, 3})},
                                               {"labels", Tensor::zeros({1}, DType::I64)}});
  LatentShardDataset ds(tmp.path(), /*hflip=*/false, 1);
  ASSERT_EQ(ds.sample_shape(), (Shape{2, 1, 3}));
  const int n = 20000;
  std::vector<double> s1(6), s2(6);
  float out[6];
  for (int d = 0; d < n; ++d) {
    Philox rng(7, static_cast<uint64_t>(d));
    ds.load(0, rng, out);
    for (int k = 0; k < 6; ++k) s1[k] += out[k], s2[k] += double(out[k]) * out[k];
  }
  for (int k = 0; k < 6; ++k) {
    const double m = s1[k] / n, var = s2[k] / n - m * m, want_var = std::exp(logvar[k]);
    EXPECT_NEAR(m, mean[k], 5 * std::sqrt(want_var / n) + 1e-6) << k;  // 5 sigma
    EXPECT_NEAR(var, want_var, 0.05 * want_var + 1e-9) << k;
  }
  // Shards must be of one kind.
  save_safetensors(tmp.file("t.safetensors"),
                   {{"latents", Tensor::zeros({1, 2, 1, 3})}, {"labels", Tensor::zeros({1}, DType::I64)}});
  EXPECT_NE(error_of([&] { LatentShardDataset bad(tmp.path(), false, 1); }).find("t.safetensors"), std::string::npos);
}

TEST(VaeDecodeSamples, WritesAdmNpzOfDecodedImages) {
  vt_test::TmpDir tmp;
  const AutoencoderKL vae = AutoencoderKL::load(kVae);
  const Tensor lat = load_safetensors(kVae + "/io.safetensors").at("mean");  // [2, 4, 8, 8]
  std::map<std::string, NpyArray> arrays;
  arrays["latents"] = NpyArray::from_tensor(lat);
  arrays["labels"] = NpyArray::from(std::vector<int64_t>{3, 5}, {2});
  const std::string out = tmp.path() + "/samples";
  save_npz(out + ".npz", arrays);
  EXPECT_EQ(vae_decode_sample_files(vae, out, /*batch=*/1), 2);
  const auto got = load_npz(out + ".npz");
  ASSERT_TRUE(got.count("arr_0"));
  EXPECT_FALSE(got.count("latents"));
  EXPECT_EQ(got.at("labels").as<int64_t>(), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(got.at("arr_0").shape, (Shape{2, 64, 64, 3}));
  // The fixture's decoded images (diffusers), converted as DiT's sample.py;
  // a value near a rounding edge may land one step away.
  const Tensor want = to_uint8_nhwc(load_safetensors(kVae + "/io.safetensors").at("decoded"));
  const std::vector<uint8_t> g = got.at("arr_0").as<uint8_t>();
  int off = 0;
  for (size_t k = 0; k < g.size(); ++k) {
    const int d = std::abs(int(g[k]) - int(want.data<uint8_t>()[k]));
    ASSERT_LE(d, 1) << k;
    off += d;
  }
  EXPECT_LT(off, static_cast<int>(g.size() / 100));
  EXPECT_TRUE(fs::exists(out + ".png"));
  // A latent with other channels than the VAE's.
  arrays["latents"] = NpyArray::from_tensor(Tensor::zeros({1, 3, 8, 8}));
  save_npz(out + ".npz", arrays);
  EXPECT_NE(error_of([&] { vae_decode_sample_files(vae, out); }).find("latent_channels"), std::string::npos);
}

}  // namespace
}  // namespace vt
