// FID Inception parity with pytorch-fid (fixtures from
// tools/inception_fixture.py): the width/16 network always, the full-size
// network when VT_INCEPTION_FIXTURE names a directory written by
// `tools/inception_fixture.py --full DIR`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "core/safetensors.h"
#include "eval/inception.h"

namespace vt {
namespace {

// max |got - want| / max |want| over all entries.
double rel_max_err(const Tensor& got, const Tensor& want) {
  std::vector<float> g = got.to_vector(), w = want.to_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    num = std::max(num, std::fabs(static_cast<double>(g[i]) - w[i]));
    den = std::max(den, std::fabs(static_cast<double>(w[i])));
  }
  return num / den;
}

struct Fixture {
  std::map<std::string, Tensor> sd;
  Tensor images, features;
};

Fixture small_fixture() {
  Fixture f;
  f.sd = load_safetensors(std::string(VT_FIXTURES_DIR) + "/eval/inception_w16.safetensors");
  f.images = f.sd.at("images");
  f.features = f.sd.at("features");
  return f;
}

TEST(InceptionFid, SmallWidthMatchesPytorchFid) {
  Fixture f = small_fixture();
  InceptionFid net(f.sd, "inception_w16");
  EXPECT_EQ(net.width_divisor(), 16);
  EXPECT_EQ(net.feature_dim(), 128);
  Tensor out = Tensor::empty({f.images.size(0), net.feature_dim()});
  net.features_u8(f.images, out);
  const double err = rel_max_err(out, f.features);
  EXPECT_LT(err, 1e-4) << "relative max error " << err;
}

TEST(InceptionFid, Uint8AndFloatInputGiveIdenticalFeatures) {
  Fixture f = small_fixture();
  InceptionFid net(f.sd, "inception_w16");
  const int64_t n = f.images.size(0);
  Tensor a = Tensor::empty({n, net.feature_dim()}), b = Tensor::empty({n, net.feature_dim()});
  net.features_u8(f.images, a);
  // The same pixels as float: v / 255 computed independently of the library.
  const int64_t h = f.images.size(1), w = f.images.size(2);
  Tensor x = Tensor::empty({n, 3, h, w});
  for (int64_t i = 0; i < n; ++i)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t c = 0; c < w; ++c)
        for (int64_t ch = 0; ch < 3; ++ch)
          x.f32()[((i * 3 + ch) * h + y) * w + c] = f.images.u8()[((i * h + y) * w + c) * 3 + ch] / 255.0f;
  net.features(x, b);
  EXPECT_EQ(a.to_vector(), b.to_vector());
}

TEST(InceptionFid, BatchCompositionDoesNotChangeFeatures) {
  Fixture f = small_fixture();
  InceptionFid net(f.sd, "inception_w16");
  Tensor all = Tensor::empty({3, net.feature_dim()});
  net.features_u8(f.images, all);
  Tensor one = Tensor::empty({1, net.feature_dim()});
  net.features_u8(f.images.slice(0, 2, 3), one);
  std::vector<float> a = all.slice(0, 2, 3).contiguous().to_vector(), b = one.to_vector();
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 * (1 + std::fabs(a[i])));
}

TEST(InceptionFid, Input299IsNotResized) {
  // A 299x299 input goes straight to the network: the result equals feeding
  // the already-scaled input, and differs from a 298x298 crop of it.
  Fixture f = small_fixture();
  InceptionFid net(f.sd, "inception_w16");
  Tensor x = Tensor::empty({1, 3, 299, 299});
  for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = static_cast<float>((i * 7919 % 256) / 255.0);
  Tensor a = Tensor::empty({1, net.feature_dim()}), b = Tensor::empty({1, net.feature_dim()});
  net.features(x, a);
  net.features(x.contiguous().clone(), b);
  EXPECT_EQ(a.to_vector(), b.to_vector());
  Tensor c = Tensor::empty({1, net.feature_dim()});
  net.features(x.slice(2, 0, 298).slice(3, 0, 298).contiguous(), c);
  EXPECT_NE(a.to_vector(), c.to_vector());
}

TEST(InceptionFid, MissingOrMisshapenWeightsNameTheTensor) {
  Fixture f = small_fixture();
  auto sd = f.sd;
  sd.erase("Mixed_6c.branch7x7dbl_3.bn.running_var");
  try {
    InceptionFid net(sd, "w.safetensors");
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Mixed_6c.branch7x7dbl_3.bn.running_var"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("w.safetensors"), std::string::npos) << e.what();
  }
  sd = f.sd;
  sd["Mixed_7c.branch1x1.conv.weight"] = Tensor::zeros({3, 3, 1, 1});
  EXPECT_THROW(InceptionFid(sd, "w"), std::runtime_error);
  EXPECT_THROW(InceptionFid({}, "w"), std::runtime_error);
}

TEST(InceptionFid, StateDictShapesAreThePytorchNetworks) {
  // The names and shapes a network reads equal those of pytorch-fid's own
  // width/16 state dict (the fixture), and a state dict made from them loads.
  Fixture f = small_fixture();
  const auto shapes = InceptionFid::state_dict_shapes(16);
  size_t matched = 0;
  for (const auto& [name, t] : f.sd) {
    if (name == "images" || name == "features" || name.rfind("fc.", 0) == 0 ||
        name.find("num_batches_tracked") != std::string::npos)
      continue;
    auto it = shapes.find(name);
    ASSERT_NE(it, shapes.end()) << name;
    EXPECT_EQ(it->second, t.shape()) << name;
    ++matched;
  }
  EXPECT_EQ(matched, shapes.size());
  std::map<std::string, Tensor> sd;
  for (const auto& [name, shape] : shapes) sd[name] = Tensor::full(shape, 0.5f);
  EXPECT_EQ(InceptionFid(sd, "made").feature_dim(), 128);
  EXPECT_THROW(InceptionFid::state_dict_shapes(3), std::invalid_argument);
}

TEST(InceptionFid, FullSizeMatchesPytorchFid) {
  const char* dir = std::getenv("VT_INCEPTION_FIXTURE");
  if (!dir || !*dir) GTEST_SKIP() << "set VT_INCEPTION_FIXTURE=DIR (tools/inception_fixture.py --full DIR)";
  InceptionFid net = InceptionFid::load(std::string(dir) + "/weights.safetensors");
  auto fx = load_safetensors(std::string(dir) + "/fixture.safetensors");
  EXPECT_EQ(net.feature_dim(), 2048);
  Tensor out = Tensor::empty({fx.at("images").size(0), 2048});
  net.features_u8(fx.at("images"), out);
  const double err = rel_max_err(out, fx.at("features"));
  std::printf("full-size Inception: %lld images, relative max error %.3g\n",
              static_cast<long long>(out.size(0)), err);
  EXPECT_LT(err, 1e-4);
}

}  // namespace
}  // namespace vt
