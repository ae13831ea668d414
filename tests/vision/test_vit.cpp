// DeiT/ViT model: load-compatibility with timm (Pre-Norm) and the released
// SiameseNorm DeiT (fixtures from tools/vtrain_timm_fixture.py, logits on real
// CIFAR-10 images), gradients of the model-level parameters by central
// finite differences, initialisation statistics and weight-decay flags.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/philox.h"
#include "core/safetensors.h"
#include "vision/vit.h"

namespace vt {
namespace {

VitConfig tiny_config(NormScheme scheme) {
  VitConfig c;
  c.img_size = 32, c.patch_size = 8, c.in_chans = 3, c.num_classes = 10;
  c.backbone.scheme = scheme;
  c.backbone.dim = 32, c.backbone.depth = 2, c.backbone.heads = 2;
  return c;
}

void check_fixture(const std::string& scheme_name, NormScheme scheme) {
  auto dict = load_safetensors(std::string(VT_FIXTURES_DIR) + "/vision/vit_" + scheme_name + ".safetensors");
  Tensor images = dict.at("input.images"), want = dict.at("output.logits");
  dict.erase("input.images");
  dict.erase("output.logits");
  VisionTransformer model(tiny_config(scheme));
  model.params().load(dict, /*strict=*/true);  // every name and shape as the PyTorch model
  const int64_t B = images.shape()[0];
  Tensor logits = Tensor::empty({B, 10});
  model.forward(images, logits);
  const float* g = logits.f32();
  const float* w = want.f32();
  for (int64_t i = 0; i < B * 10; ++i) EXPECT_NEAR(g[i], w[i], 1e-4) << scheme_name << " logit " << i;
}

TEST(Vit, MatchesTimmPreNormLogits) { check_fixture("pre", NormScheme::Pre); }
TEST(Vit, MatchesReleasedSiameseDeiTLogits) { check_fixture("siamese", NormScheme::Siamese); }

TEST(Vit, StateDictNamesAndDecayFlags) {
  VisionTransformer m(tiny_config(NormScheme::Siamese));
  const ParamStore& s = m.params();
  EXPECT_EQ(s.info(s.id("patch_embed.proj.weight")).shape, (Shape{32, 3, 8, 8}));
  EXPECT_EQ(s.info(s.id("pos_embed")).shape, (Shape{1, 17, 32}));
  EXPECT_EQ(s.info(s.id("cls_token")).shape, (Shape{1, 1, 32}));
  EXPECT_EQ(s.info(s.id("head.weight")).shape, (Shape{10, 32}));
  for (const ParamInfo& p : s.infos()) {
    // DeiT: no decay for 1-D params, pos_embed and cls_token.
    const bool want = p.shape.size() > 1 && p.name != "pos_embed" && p.name != "cls_token";
    EXPECT_EQ(p.weight_decay, want) << p.name;
  }
}

TEST(Vit, InitFollowsTimm) {
  VitConfig c = tiny_config(NormScheme::Pre);
  c.backbone.dim = 64;
  VisionTransformer m(c);
  m.init(7);
  auto stats = [&](const std::string& n, double* mean, double* sd, double* maxabs) {
    Tensor t = m.params().value(m.params().id(n));
    const float* p = t.f32();
    double s = 0, s2 = 0, mx = 0;
    for (int64_t i = 0; i < t.numel(); ++i) s += p[i], s2 += double(p[i]) * p[i], mx = std::max(mx, std::fabs(double(p[i])));
    *mean = s / t.numel();
    *sd = std::sqrt(s2 / t.numel() - *mean * *mean);
    *maxabs = mx;
  };
  double mean, sd, mx;
  stats("blocks.0.mlp.fc1.weight", &mean, &sd, &mx);  // 16384 draws of trunc_normal(0.02)
  EXPECT_NEAR(sd, 0.02, 0.02 * 0.05);
  stats("pos_embed", &mean, &sd, &mx);
  EXPECT_NEAR(sd, 0.02, 0.02 * 0.15);
  stats("patch_embed.proj.weight", &mean, &sd, &mx);  // U(-1/sqrt(192), 1/sqrt(192))
  const double bound = 1.0 / std::sqrt(192.0);
  EXPECT_LE(mx, bound);
  EXPECT_NEAR(sd, bound / std::sqrt(3.0), bound / std::sqrt(3.0) * 0.05);
  stats("head.bias", &mean, &sd, &mx);
  EXPECT_EQ(mx, 0.0);
  stats("norm.weight", &mean, &sd, &mx);
  EXPECT_EQ(mean, 1.0);
  EXPECT_EQ(sd, 0.0);
}

// loss = sum(logits * R); compares backward() with central differences on
// the parameters vision/ owns (patch embedding, cls token, pos_embed, head)
// and one backbone weight.
TEST(Vit, GradientsMatchFiniteDifferences) {
  VitConfig c = tiny_config(NormScheme::Siamese);
  c.img_size = 16, c.backbone.dim = 16, c.num_classes = 5;
  VisionTransformer m(c);
  m.init(3);
  Philox g(11, 0);
  const int64_t B = 2;
  Tensor images = Tensor::empty({B, 3, 16, 16});
  for (int64_t i = 0; i < images.numel(); ++i) images.f32()[i] = static_cast<float>(g.normal());
  Tensor R = Tensor::empty({B, 5});
  for (int64_t i = 0; i < R.numel(); ++i) R.f32()[i] = static_cast<float>(g.normal());
  Tensor logits = Tensor::empty({B, 5});
  auto loss = [&]() {
    m.forward(images, logits);
    double s = 0;
    for (int64_t i = 0; i < logits.numel(); ++i) s += double(logits.f32()[i]) * R.f32()[i];
    return s;
  };
  loss();
  m.params().zero_grad();
  m.backward(R);
  for (const std::string name : {"patch_embed.proj.weight", "patch_embed.proj.bias", "cls_token", "pos_embed",
                                 "head.weight", "head.bias", "blocks.1.mlp.fc2.weight"}) {
    Tensor w = m.params().value(m.params().id(name));
    Tensor gr = m.params().grad(m.params().id(name));
    for (int k = 0; k < 4; ++k) {
      const int64_t i = static_cast<int64_t>(g.next_u64() % static_cast<uint64_t>(w.numel()));
      const float orig = w.f32()[i];
      const float h = 1e-2f;
      w.f32()[i] = orig + h;
      const double lp = loss();
      w.f32()[i] = orig - h;
      const double lm = loss();
      w.f32()[i] = orig;
      const double fd = (lp - lm) / (2.0 * h);
      EXPECT_NEAR(gr.f32()[i], fd, 2e-3 + 2e-2 * std::fabs(fd)) << name << "[" << i << "]";
    }
  }
}

// The model keeps per-batch workspaces: a second forward/backward on the
// same batch must accumulate exactly the same gradients again.
TEST(Vit, RepeatedBackwardAccumulates) {
  VisionTransformer m(tiny_config(NormScheme::Siamese));
  m.init(1);
  Philox g(2, 0);
  Tensor images = Tensor::empty({3, 3, 32, 32}), dl = Tensor::empty({3, 10}), logits = Tensor::empty({3, 10});
  for (int64_t i = 0; i < images.numel(); ++i) images.f32()[i] = static_cast<float>(g.normal());
  for (int64_t i = 0; i < dl.numel(); ++i) dl.f32()[i] = static_cast<float>(g.normal());
  m.params().zero_grad();
  m.forward(images, logits);
  m.backward(dl);
  std::vector<float> once = m.params().grads().to_vector();
  m.forward(images, logits);
  m.backward(dl);
  std::vector<float> twice = m.params().grads().to_vector();
  for (size_t i = 0; i < once.size(); ++i) ASSERT_NEAR(twice[i], 2 * once[i], 1e-5f + 1e-5f * std::fabs(once[i])) << i;
}

TEST(Vit, PresetsAndBadConfigs) {
  VitConfig s = vit_preset("deit_small", NormScheme::Pre, 0.1f);
  EXPECT_EQ(s.backbone.dim, 384);
  EXPECT_EQ(s.backbone.heads, 6);
  EXPECT_EQ(s.backbone.depth, 12);
  ASSERT_EQ(s.backbone.drop_path.size(), 12u);
  EXPECT_FLOAT_EQ(s.backbone.drop_path[0], 0.0f);
  EXPECT_FLOAT_EQ(s.backbone.drop_path[11], 0.1f);
  EXPECT_EQ(vit_preset("deit_tiny").backbone.dim, 192);
  EXPECT_EQ(vit_preset("deit_base").backbone.heads, 12);
  EXPECT_THROW(vit_preset("deit_huge"), std::invalid_argument);
  VitConfig c = tiny_config(NormScheme::Pre);
  c.img_size = 30;
  try {
    VisionTransformer m(c);
    FAIL() << "image 30 with patch 8 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("model.patch_size"), std::string::npos) << e.what();
  }
  VisionTransformer m(tiny_config(NormScheme::Pre));
  Tensor bad = Tensor::zeros({2, 3, 16, 16}), logits = Tensor::empty({2, 10});
  EXPECT_THROW(m.forward(bad, logits), std::invalid_argument);
}

}  // namespace
}  // namespace vt
