// Whole-backbone gradient checks by central finite differences of
// L = sum(out * R) (accumulated in double) on tiny configurations, with all
// parameters random (adaLN included) and drop-path active for DeiT.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backbone/backbone.h"
#include "core/philox.h"
#include "gradcheck.h"

namespace vt {
namespace {

struct GcCase {
  std::string name;
  ModelVariant variant;
  NormScheme scheme;
  bool normalized_input;
};

class BackboneGradcheck : public ::testing::TestWithParam<GcCase> {};

TEST_P(BackboneGradcheck, MatchesFiniteDifferences) {
  const GcCase gc = GetParam();
  BackboneConfig cfg;
  cfg.variant = gc.variant;
  cfg.scheme = gc.scheme;
  cfg.normalized_input = gc.normalized_input;
  cfg.dim = 8, cfg.depth = 2, cfg.heads = 2, cfg.mlp_ratio = 2.0;
  cfg.mixln_alpha = 0.5;  // Mix-LN: one Post block, then one Pre block
  if (gc.scheme == NormScheme::SpanNorm) cfg.spannorm_alpha = 0.7;  // a set alpha (the fixtures use the default)
  const bool dit = gc.variant == ModelVariant::DiT;
  cfg.gelu = dit ? Activation::GeluTanh : Activation::GeluErf;
  if (!dit) cfg.drop_path = {0.3f, 0.5f};
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  Philox g(11, 1);
  float* w = store.weights().f32();
  for (const ParamInfo& p : store.infos())
    for (int64_t i = 0; i < p.numel; ++i)
      w[p.offset + i] = static_cast<float>(p.name.find("norm") != std::string::npos && p.name.find("weight") != std::string::npos
                                               ? g.normal(1.0, 0.2)
                                               : g.normal(0.0, 0.4));
  const int64_t B = 3, T = 3, D = cfg.dim;
  Tensor h = Tensor::empty({B, T, D}), R = Tensor::empty({B, T, D});
  for (int64_t i = 0; i < h.numel(); ++i) h.f32()[i] = static_cast<float>(g.normal()), R.f32()[i] = static_cast<float>(g.normal());
  Tensor c;
  if (dit) {
    c = Tensor::empty({B, D});
    for (int64_t i = 0; i < c.numel(); ++i) c.f32()[i] = static_cast<float>(g.normal());
  }
  // A fixed (seed, step) draws the same drop-path masks in every evaluation.
  const uint64_t seed = 5, step = 2;
  Tensor out = Tensor::zeros({B, T, D});
  auto loss = [&]() {
    bb.forward(h, c, out, /*training=*/true, seed, step);
    double L = 0;
    for (int64_t i = 0; i < out.numel(); ++i) L += static_cast<double>(out.f32()[i]) * R.f32()[i];
    return L;
  };
  loss();
  store.zero_grad();
  Tensor dh = Tensor::zeros({B, T, D}), dc = dit ? Tensor::zeros({B, D}) : Tensor();
  bb.backward(R, dh, dc);

  auto probe = [&](float* p, float analytic, const std::string& what) {
    const double fd = gradcheck::central_difference_at(p, 1e-2f, loss);
    EXPECT_NEAR(analytic, fd, 1e-2 * std::fabs(fd) + 3e-3) << gc.name << " " << what;
  };
  for (int64_t i : {0L, 17L, 40L, B * T * D - 1}) probe(h.f32() + i, dh.f32()[i], "h[" + std::to_string(i) + "]");
  if (dit)
    for (int64_t i : {0L, 9L, B * D - 1}) probe(c.f32() + i, dc.f32()[i], "c[" + std::to_string(i) + "]");
  // A few entries of every third parameter tensor.
  for (size_t k = 0; k < store.size(); k += 3) {
    const ParamInfo& p = store.info(k);
    for (int64_t i : {int64_t{0}, p.numel / 2, p.numel - 1})
      probe(w + p.offset + i, store.grads().f32()[p.offset + i], p.name + "[" + std::to_string(i) + "]");
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, BackboneGradcheck,
    ::testing::Values(GcCase{"deit_siamese", ModelVariant::DeiT, NormScheme::Siamese, true},
                      GcCase{"deit_pre", ModelVariant::DeiT, NormScheme::Pre, true},
                      GcCase{"deit_post", ModelVariant::DeiT, NormScheme::Post, true},
                      GcCase{"dit_siamese", ModelVariant::DiT, NormScheme::Siamese, true},
                      GcCase{"dit_siamese_noinput", ModelVariant::DiT, NormScheme::Siamese, false},
                      GcCase{"dit_post", ModelVariant::DiT, NormScheme::Post, true},
                      GcCase{"deit_mixln", ModelVariant::DeiT, NormScheme::MixLN, true},
                      GcCase{"deit_deepnorm", ModelVariant::DeiT, NormScheme::DeepNorm, true},
                      GcCase{"deit_residual", ModelVariant::DeiT, NormScheme::ResiDual, true},
                      GcCase{"deit_hybrid", ModelVariant::DeiT, NormScheme::Hybrid, true},
                      GcCase{"dit_mixln", ModelVariant::DiT, NormScheme::MixLN, true},
                      GcCase{"dit_deepnorm", ModelVariant::DiT, NormScheme::DeepNorm, true},
                      GcCase{"dit_residual", ModelVariant::DiT, NormScheme::ResiDual, true},
                      GcCase{"dit_hybrid", ModelVariant::DiT, NormScheme::Hybrid, true},
                      GcCase{"deit_spannorm", ModelVariant::DeiT, NormScheme::SpanNorm, true},
                      GcCase{"dit_spannorm", ModelVariant::DiT, NormScheme::SpanNorm, true}),
    [](const ::testing::TestParamInfo<GcCase>& i) { return i.param.name; });

TEST(Backbone, DropPathMasksFollowSeedAndVanishAtInference) {
  BackboneConfig cfg;
  cfg.dim = 8, cfg.depth = 2, cfg.heads = 2;
  cfg.drop_path = {0.5f, 0.5f};
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  store.init(1);
  Tensor h = Tensor::full({4, 3, 8}, 0.0f);
  Philox g(2, 2);
  for (int64_t i = 0; i < h.numel(); ++i) h.f32()[i] = static_cast<float>(g.normal());
  Tensor a = Tensor::zeros(h.shape()), b = Tensor::zeros(h.shape()), e1 = Tensor::zeros(h.shape()),
         e2 = Tensor::zeros(h.shape());
  bb.forward(h, Tensor(), a, true, 7, 1);
  bb.forward(h, Tensor(), b, true, 7, 1);
  EXPECT_EQ(a.to_vector(), b.to_vector());
  bb.forward(h, Tensor(), e1, false, 7, 1);
  bb.forward(h, Tensor(), e2, false, 8, 9);
  EXPECT_EQ(e1.to_vector(), e2.to_vector());
  EXPECT_NE(a.to_vector(), e1.to_vector());
}

TEST(Backbone, RejectsBadInputs) {
  BackboneConfig cfg;
  cfg.dim = 8, cfg.depth = 1, cfg.heads = 3;
  ParamStore s0;
  EXPECT_THROW(Backbone(s0, cfg), std::invalid_argument);
  cfg.heads = 2;
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  Tensor out = Tensor::zeros({2, 3, 8});
  EXPECT_THROW(bb.forward(Tensor::zeros({2, 3, 7}), Tensor(), out), std::invalid_argument);
  EXPECT_THROW(bb.forward(Tensor::zeros({2, 3, 8}), Tensor::zeros({2, 8}), out), std::invalid_argument);
  EXPECT_THROW(bb.backward(out, out, Tensor()), std::logic_error);
  EXPECT_THROW(norm_scheme_from_name("span_norm"), std::invalid_argument);
}

}  // namespace
}  // namespace vt
