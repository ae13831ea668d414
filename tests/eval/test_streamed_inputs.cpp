// veval's .npz images are read in batches (core/npz_image_reader.h), never
// whole: on a few dozen images the statistics, the suite's activations and a
// reference's arr_0 equal, bit for bit, those computed here from the whole
// array (load_npz), for stored and deflated archives, with a batch that
// does not divide N.
#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

#include "core/npz.h"
#include "core/philox.h"
#include "core/safetensors.h"
#include "eval/adm_suite.h"
#include "eval/fid_activations.h"
#include "eval/fid_inputs.h"
#include "kernels/resize.h"
#include "test_fs.h"

namespace vt {
namespace {

constexpr int64_t kN = 40, kH = 20, kW = 24, kBatch = 16;  // batches of 16, 16, 8

class StreamedInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    Philox rng(37, 0);
    std::vector<uint8_t> px(static_cast<size_t>(kN * kH * kW * 3));
    for (auto& v : px) v = static_cast<uint8_t>(rng.uniform() * 256);
    arr_ = NpyArray::from(px, {kN, kH, kW, 3});
    save_npz(dir_.file("stored.npz"), {{"arr_0", arr_}});
    save_npz(dir_.file("deflated.npz"), {{"arr_0", arr_}}, true);
    net_ = std::make_unique<InceptionFid>(
        load_safetensors(std::string(VT_FIXTURES_DIR) + "/eval/inception_w16.safetensors"), "w16");
  }
  // Images [s, s + b) of the whole array as one U8 NHWC tensor.
  Tensor rows(int64_t s, int64_t b) {
    Tensor t = Tensor::empty({b, kH, kW, 3}, DType::U8);
    std::memcpy(t.raw(), arr_.bytes.data() + s * kH * kW * 3, static_cast<size_t>(b * kH * kW * 3));
    return t;
  }

  vt_test::TmpDir dir_;
  NpyArray arr_;
  std::unique_ptr<InceptionFid> net_;
};

TEST_F(StreamedInputs, StatisticsEqualTheWholeArrayBitForBit) {
  // The whole array, batch by batch: v / 255, bilinear to 299, pool3.
  StatsAccumulator acc(net_->feature_dim());
  const NpyArray whole = load_npz(dir_.file("stored.npz")).at("arr_0");
  ASSERT_EQ(whole.bytes, arr_.bytes);
  for (int64_t s = 0; s < kN; s += kBatch) {
    const int64_t b = std::min(kBatch, kN - s);
    Tensor x = Tensor::empty({b, 3, 299, 299});
    resize_bilinear(u8_nhwc_to_unit_nchw(rows(s, b)), x);
    Tensor f = Tensor::empty({b, net_->feature_dim()});
    net_->features(x, f);
    acc.add(f);
  }
  const GaussianStats want = acc.finish();
  for (const char* f : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(f);
    const FidSourceStats got = fid_source_stats(dir_.file(f), net_.get(), kBatch);
    EXPECT_EQ(got.count, kN);
    EXPECT_EQ((got.stats.mu - want.mu).cwiseAbs().maxCoeff(), 0.0);
    EXPECT_EQ((got.stats.sigma - want.sigma).cwiseAbs().maxCoeff(), 0.0);
  }
}

TEST_F(StreamedInputs, SuiteActivationsEqualTheWholeArrayBitForBit) {
  // Per-image preprocessing of the suite (ADM protocol), on the whole array.
  const int64_t D = net_->feature_dim(), S = InceptionFid::spatial_dim();
  std::vector<float> pool(static_cast<size_t>(kN * D)), spatial(static_cast<size_t>(kN * S));
  for (int64_t s = 0; s < kN; s += kBatch) {
    const int64_t b = std::min(kBatch, kN - s);
    Tensor x = Tensor::empty({b, 3, 299, 299});
    for (int64_t i = 0; i < b; ++i)
      preprocess_fid_image(arr_.bytes.data() + (s + i) * kH * kW * 3, kH, kW, FidProtocol::Adm, x, i);
    net_->forward(x, Tensor::wrap(pool.data() + s * D, {b, D}, DType::F32),
                  Tensor::wrap(spatial.data() + s * S, {b, S}, DType::F32));
  }
  for (const char* f : {"stored.npz", "deflated.npz"}) {
    SCOPED_TRACE(f);
    const FidActivations a = compute_fid_activations(dir_.file(f), *net_, FidProtocol::Adm, kBatch, true, false);
    EXPECT_EQ(a.n, kN);
    EXPECT_EQ(a.pool, pool);
    EXPECT_EQ(a.spatial, spatial);
  }
}

TEST_F(StreamedInputs, ReferenceArr0IsTheSourceImages) {
  SuiteOptions o;
  o.batch = kBatch;
  const std::string ref = dir_.file("ref.npz");
  EXPECT_EQ(write_adm_reference(dir_.file("deflated.npz"), ref, *net_, o), kN);
  const auto m = load_npz(ref);
  EXPECT_EQ(m.at("arr_0").shape, (Shape{kN, kH, kW, 3}));
  EXPECT_EQ(m.at("arr_0").bytes, arr_.bytes);
  EXPECT_EQ(m.at("count").as<int64_t>(), std::vector<int64_t>{kN});
  EXPECT_EQ(m.at("pool").shape, (Shape{kN, net_->feature_dim()}));
}

TEST_F(StreamedInputs, BadArr0NamesTheFileAndKey) {
  const std::string f = dir_.file("f32.npz");
  save_npz(f, {{"arr_0", NpyArray::from(std::vector<float>(4 * 8 * 8 * 3), {4, 8, 8, 3})}});
  const std::string e = vt_test::error_of([&] { fid_source_stats(f, net_.get(), kBatch); });
  EXPECT_NE(e.find("'" + f + "': arr_0 has dtype <f4 and shape [4, 8, 8, 3]; expected uint8 [N, H, W, 3]"),
            std::string::npos)
      << e;
}

}  // namespace
}  // namespace vt
