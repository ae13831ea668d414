// The mechanism measurements of the Backbone (stream RMS, LayerNorm scales,
// layer pruning) and the schemes' constants (Mix-LN split, DeepNet alpha,
// beta and initialisation, SpanNorm's alpha and adaLN-Zero identity), each
// against a closed form or an independently built model.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "backbone/backbone.h"
#include "core/philox.h"

namespace vt {
namespace {

BackboneConfig tiny(ModelVariant v, NormScheme s, int64_t depth) {
  BackboneConfig c;
  c.variant = v;
  c.scheme = s;
  c.dim = 8, c.depth = depth, c.heads = 2, c.mlp_ratio = 2.0;
  c.gelu = v == ModelVariant::DiT ? Activation::GeluTanh : Activation::GeluErf;
  return c;
}

// Every parameter random (norm weights around 1, adaLN non-zero).
void randomize(ParamStore& store, uint64_t seed) {
  Philox g(seed, 3);
  float* w = store.weights().f32();
  for (const ParamInfo& p : store.infos()) {
    const bool nw = p.name.find("norm") != std::string::npos && p.name.find("weight") != std::string::npos;
    for (int64_t i = 0; i < p.numel; ++i)
      w[p.offset + i] = static_cast<float>(nw ? g.normal(1.0, 0.2) : g.normal(0.0, 0.4));
  }
}

Tensor randn(const Shape& s, uint64_t seed) {
  Tensor t = Tensor::empty(s);
  Philox g(seed, 4);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(g.normal());
  return t;
}

double rms(const Tensor& t) {
  double a = 0;
  for (float v : t.to_vector()) a += static_cast<double>(v) * v;
  return std::sqrt(a / static_cast<double>(t.numel()));
}

struct PruneCase {
  std::string name;
  ModelVariant variant;
  NormScheme scheme;
};
class BackbonePruning : public ::testing::TestWithParam<PruneCase> {};

// Dropping the last block of a depth-3 backbone must give exactly the depth-2
// backbone holding the same first two blocks and final norms: output, input
// gradient and every shared parameter's gradient.
TEST_P(BackbonePruning, EqualsTheShallowerModel) {
  const PruneCase pc = GetParam();
  const bool dit = pc.variant == ModelVariant::DiT;
  ParamStore s3, s2;
  BackboneConfig cfg3 = tiny(pc.variant, pc.scheme, 3), cfg2 = tiny(pc.variant, pc.scheme, 2);
  // SpanNorm's default alpha depends on the depth; pruning keeps the model's.
  if (pc.scheme == NormScheme::SpanNorm) cfg3.spannorm_alpha = cfg2.spannorm_alpha = cfg3.spannorm_scale();
  Backbone deep(s3, cfg3), shallow(s2, cfg2);
  s3.finalize();
  s2.finalize();
  randomize(s3, 7);
  std::map<std::string, Tensor> sd;
  for (const auto& kv : s3.state_dict())
    if (s2.contains(kv.first)) sd[kv.first] = kv.second;
  s2.load(sd, /*strict=*/true);

  const int64_t B = 2, T = 3, D = 8;
  const Tensor h = randn({B, T, D}, 1), R = randn({B, T, D}, 2);
  const Tensor c = dit ? randn({B, D}, 3) : Tensor();
  Tensor o3 = Tensor::zeros({B, T, D}), o2 = Tensor::zeros({B, T, D});
  deep.set_active_depth(2);
  deep.forward(h, c, o3);
  shallow.forward(h, c, o2);
  EXPECT_EQ(o3.to_vector(), o2.to_vector());

  s3.zero_grad();
  s2.zero_grad();
  Tensor d3 = Tensor::zeros({B, T, D}), d2 = Tensor::zeros({B, T, D});
  Tensor c3 = dit ? Tensor::zeros({B, D}) : Tensor(), c2 = dit ? Tensor::zeros({B, D}) : Tensor();
  deep.backward(R, d3, c3);
  shallow.backward(R, d2, c2);
  EXPECT_EQ(d3.to_vector(), d2.to_vector());
  if (dit) {
    EXPECT_EQ(c3.to_vector(), c2.to_vector());
  }
  for (const ParamInfo& p : s2.infos())
    EXPECT_EQ(s3.grad(s3.id(p.name)).to_vector(), s2.grad(s2.id(p.name)).to_vector()) << p.name;
  for (const ParamInfo& p : s3.infos())
    if (p.name.rfind("blocks.2.", 0) == 0) {
      for (float v : s3.grad(s3.id(p.name)).to_vector()) ASSERT_EQ(v, 0.0f) << p.name << " of a pruned block";
    }

  deep.set_active_depth(3);
  deep.forward(h, c, o3);
  EXPECT_NE(o3.to_vector(), o2.to_vector());
  EXPECT_THROW(deep.set_active_depth(4), std::invalid_argument);
  EXPECT_THROW(deep.set_active_depth(-1), std::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(All, BackbonePruning,
                         ::testing::Values(PruneCase{"deit_siamese", ModelVariant::DeiT, NormScheme::Siamese},
                                           PruneCase{"deit_pre", ModelVariant::DeiT, NormScheme::Pre},
                                           PruneCase{"deit_residual", ModelVariant::DeiT, NormScheme::ResiDual},
                                           PruneCase{"deit_hybrid", ModelVariant::DeiT, NormScheme::Hybrid},
                                           PruneCase{"dit_siamese", ModelVariant::DiT, NormScheme::Siamese},
                                           PruneCase{"dit_post", ModelVariant::DiT, NormScheme::Post},
                                           PruneCase{"deit_spannorm", ModelVariant::DeiT, NormScheme::SpanNorm},
                                           PruneCase{"dit_spannorm", ModelVariant::DiT, NormScheme::SpanNorm}),
                         [](const ::testing::TestParamInfo<PruneCase>& i) { return i.param.name; });

// DiT Pre-Norm has no final norm, so the output of the model pruned to l + 1
// blocks is the y stream after block l of the full model.
TEST(BackboneStreamRms, PreStreamIsThePrunedOutput) {
  ParamStore store;
  Backbone bb(store, tiny(ModelVariant::DiT, NormScheme::Pre, 3));
  store.finalize();
  randomize(store, 9);
  const Tensor h = randn({2, 3, 8}, 5), c = randn({2, 8}, 6);
  Tensor out = Tensor::zeros(h.shape());
  EXPECT_THROW(bb.stream_rms(), std::logic_error);
  bb.forward(h, c, out);
  const Backbone::StreamRms r = bb.stream_rms();
  ASSERT_EQ(r.y.size(), 3u);
  ASSERT_EQ(r.x.size(), 3u);
  for (int64_t l = 0; l < 3; ++l) {
    bb.set_active_depth(l + 1);
    bb.forward(h, c, out);
    EXPECT_NEAR(r.y[static_cast<size_t>(l)], rms(out), 1e-9 * rms(out)) << "block " << l;
    EXPECT_TRUE(std::isnan(r.x[static_cast<size_t>(l)]));
  }
  EXPECT_GT(r.y[2], r.y[0]);  // Pre-Norm's stream grows with depth
}

// A Post-Norm stream leaves each block through a non-affine LayerNorm (DiT):
// every row then has mean 0 and mean square var / (var + eps), so the RMS is
// 1 up to eps / var.
TEST(BackboneStreamRms, PostNormStreamHasUnitRms) {
  ParamStore store;
  Backbone bb(store, tiny(ModelVariant::DiT, NormScheme::Post, 4));
  store.finalize();
  randomize(store, 10);
  const Tensor h = randn({2, 3, 8}, 7), c = randn({2, 8}, 8);
  Tensor out = Tensor::zeros(h.shape());
  bb.forward(h, c, out);
  const Backbone::StreamRms r = bb.stream_rms();
  ASSERT_EQ(r.x.size(), 4u);
  for (double v : r.x) EXPECT_NEAR(v, 1.0, 1e-4);
  for (double v : r.y) EXPECT_TRUE(std::isnan(v));
}

// Mix-LN: its Post blocks carry x, its Pre blocks y (one stream underneath).
TEST(BackboneStreamRms, MixLnReportsTheStreamEachBlockCarries) {
  BackboneConfig cfg = tiny(ModelVariant::DeiT, NormScheme::MixLN, 4);
  cfg.mixln_alpha = 0.5;
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  randomize(store, 11);
  const Tensor h = randn({2, 3, 8}, 9);
  Tensor out = Tensor::zeros(h.shape());
  bb.forward(h, Tensor(), out);
  const Backbone::StreamRms r = bb.stream_rms();
  for (size_t l = 0; l < 4; ++l) {
    EXPECT_EQ(std::isnan(r.x[l]), l >= 2) << l;
    EXPECT_EQ(std::isnan(r.y[l]), l < 2) << l;
  }
}

// Mean |weight| per affine norm, set to known values with alternating signs.
TEST(BackboneNormScales, MeanAbsoluteWeightPerNorm) {
  ParamStore store;
  Backbone bb(store, tiny(ModelVariant::DeiT, NormScheme::Siamese, 2));
  store.finalize();
  store.init(1);
  std::map<std::string, double> want;
  int k = 0;
  for (const ParamInfo& p : store.infos()) {
    if (p.name.find("norm") == std::string::npos || p.name.find(".weight") == std::string::npos) continue;
    const double v = 0.25 * (++k);
    float* w = store.value(store.id(p.name)).f32();
    for (int64_t i = 0; i < p.numel; ++i) w[i] = static_cast<float>(i % 2 ? -v : v);
    want[p.name.substr(0, p.name.size() - 7)] = v;
  }
  const auto got = bb.norm_scales();
  // 2 blocks x 2 sublayers x (post, pre, input) + 3 final norms.
  ASSERT_EQ(got.size(), 15u);
  ASSERT_EQ(want.size(), 15u);
  for (const auto& e : got) {
    ASSERT_TRUE(want.count(e.first)) << e.first;
    EXPECT_NEAR(e.second, want[e.first], 1e-7) << e.first;
  }
  EXPECT_EQ(got.front().first, "blocks.0.post_norm1");
  EXPECT_EQ(got.back().first, "final_norm");
}

// HybridNorm's per-head q/k/v norms are affine in DeiT and DiT and follow the
// block norms; DiT's non-affine block norms (Pre-Norm, SpanNorm) give nothing.
TEST(BackboneNormScales, HybridQkvNormsAndNothingForNonAffineDiT) {
  for (ModelVariant v : {ModelVariant::DeiT, ModelVariant::DiT}) {
    ParamStore store;
    Backbone bb(store, tiny(v, NormScheme::Hybrid, 1));
    store.finalize();
    store.init(1);
    std::map<std::string, double> want;
    int k = 0;
    for (const ParamInfo& p : store.infos()) {
      if (p.name.find("norm") == std::string::npos || p.name.find(".weight") == std::string::npos) continue;
      const double val = 0.5 * (++k);
      float* w = store.value(store.id(p.name)).f32();
      for (int64_t i = 0; i < p.numel; ++i) w[i] = static_cast<float>(i % 3 ? val : -val);
      want[p.name.substr(0, p.name.size() - 7)] = val;
    }
    const auto got = bb.norm_scales();
    // DeiT: norm2, q/k/v norms, final norm; DiT: q/k/v norms only.
    ASSERT_EQ(got.size(), v == ModelVariant::DeiT ? 5u : 3u);
    ASSERT_EQ(want.size(), got.size());
    for (const auto& e : got) {
      ASSERT_TRUE(want.count(e.first)) << e.first;
      EXPECT_NEAR(e.second, want[e.first], 1e-7) << e.first;
    }
    EXPECT_EQ(got[got.size() - (v == ModelVariant::DeiT ? 2 : 1)].first, "blocks.0.attn.v_norm");
  }
  for (NormScheme s : {NormScheme::Pre, NormScheme::Post, NormScheme::SpanNorm}) {
    ParamStore store;
    Backbone bb(store, tiny(ModelVariant::DiT, s, 2));
    store.finalize();
    EXPECT_TRUE(bb.norm_scales().empty()) << norm_scheme_name(s);
  }
}

TEST(NormSchemes, NamesRoundTripAndConstantsFollowThePapers) {
  for (const char* n : {"pre", "post", "siamese", "mixln", "deepnorm", "residual", "hybrid", "spannorm"})
    EXPECT_STREQ(norm_scheme_name(norm_scheme_from_name(n)), n);
  BackboneConfig c;
  c.depth = 12;
  EXPECT_EQ(c.mixln_post_blocks(), 3);  // Mix-LN: floor(0.25 * 12)
  c.depth = 5;
  EXPECT_EQ(c.mixln_post_blocks(), 1);
  c.mixln_alpha = 1.0;
  EXPECT_EQ(c.mixln_post_blocks(), 5);
  c.mixln_alpha = 1.5;
  EXPECT_THROW(c.validate(), std::invalid_argument);
  c.depth = 8;  // DeepNet: alpha = (2N)^(1/4) = 2, beta = (8N)^(-1/4) = 1 / (2 sqrt 2)
  EXPECT_NEAR(c.deepnorm_alpha(), 2.0, 1e-12);
  EXPECT_NEAR(c.deepnorm_beta(), 1.0 / (2.0 * std::sqrt(2.0)), 1e-12);
  c.depth = 16;  // SpanNorm: alpha = 1/sqrt(N) unless set; set values must be positive
  EXPECT_NEAR(c.spannorm_scale(), 0.25, 1e-12);
  c.spannorm_alpha = 0.5;
  EXPECT_EQ(c.spannorm_scale(), 0.5);
  c.mixln_alpha = 0.25;
  EXPECT_NO_THROW(c.validate());
  for (double bad : {0.0, -1.0, std::nan("")}) {
    c.spannorm_alpha = bad;
    EXPECT_THROW(c.validate(), std::invalid_argument) << bad;
  }
}

// DiT SpanNorm with the zero-initialised adaLN (DiT's init): gate_mlp = 0 on
// the spanning branch makes every block, and so the whole trunk, the identity.
TEST(NormSchemes, DitSpanNormStartsAsIdentity) {
  ParamStore store;
  Backbone bb(store, tiny(ModelVariant::DiT, NormScheme::SpanNorm, 3));
  store.finalize();
  randomize(store, 12);
  for (const ParamInfo& p : store.infos())
    if (p.name.find("adaLN_modulation") != std::string::npos) store.value(store.id(p.name)).zero();
  const Tensor h = randn({2, 3, 8}, 13), c = randn({2, 8}, 14);
  Tensor out = Tensor::zeros(h.shape());
  bb.forward(h, c, out);
  EXPECT_EQ(out.to_vector(), h.to_vector());
}

// SpanNorm's streams: x holds each block's b = norm2(...) (non-affine in DiT:
// RMS 1 up to eps), y the spanning path, which is DiT's output after pruning
// to l + 1 blocks.
TEST(BackboneStreamRms, SpanNormReportsTheNormalisedBranchAndTheSpan) {
  ParamStore store;
  Backbone bb(store, tiny(ModelVariant::DiT, NormScheme::SpanNorm, 3));
  store.finalize();
  randomize(store, 15);
  const Tensor h = randn({2, 3, 8}, 16), c = randn({2, 8}, 17);
  Tensor out = Tensor::zeros(h.shape());
  bb.forward(h, c, out);
  const Backbone::StreamRms r = bb.stream_rms();
  ASSERT_EQ(r.x.size(), 3u);
  for (int64_t l = 0; l < 3; ++l) {
    EXPECT_NEAR(r.x[static_cast<size_t>(l)], 1.0, 1e-4) << "block " << l;
    bb.set_active_depth(l + 1);
    bb.forward(h, c, out);
    EXPECT_NEAR(r.y[static_cast<size_t>(l)], rms(out), 1e-9 * rms(out)) << "block " << l;
  }
}

// DeepNet's init: xavier_normal with gain 1 on q, k and beta on v, attn.proj,
// mlp.fc1, mlp.fc2 (std = gain * sqrt(2 / (fan_in + fan_out)) per matrix).
TEST(NormSchemes, DeepNormInitialisationScalesValueAndOutputWeights) {
  BackboneConfig cfg = tiny(ModelVariant::DeiT, NormScheme::DeepNorm, 8);
  cfg.dim = 64, cfg.heads = 4;
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  store.init(3);
  const double beta = 1.0 / (2.0 * std::sqrt(2.0)), D = 64.0, Hd = 128.0;
  auto sample_std = [](const std::vector<float>& v, size_t a, size_t b) {
    double s = 0;
    for (size_t i = a; i < b; ++i) s += static_cast<double>(v[i]) * v[i];
    return std::sqrt(s / static_cast<double>(b - a));
  };
  const auto qkv = store.value(store.id("blocks.3.attn.qkv.weight")).to_vector();
  const size_t n = 64 * 64;
  const double unit = std::sqrt(2.0 / (D + D));
  EXPECT_NEAR(sample_std(qkv, 0, n), unit, 0.05 * unit);
  EXPECT_NEAR(sample_std(qkv, n, 2 * n), unit, 0.05 * unit);
  EXPECT_NEAR(sample_std(qkv, 2 * n, 3 * n), beta * unit, 0.05 * beta * unit);
  const auto proj = store.value(store.id("blocks.3.attn.proj.weight")).to_vector();
  EXPECT_NEAR(sample_std(proj, 0, proj.size()), beta * unit, 0.05 * beta * unit);
  const double mlp = beta * std::sqrt(2.0 / (D + Hd));
  const auto fc1 = store.value(store.id("blocks.3.mlp.fc1.weight")).to_vector();
  const auto fc2 = store.value(store.id("blocks.3.mlp.fc2.weight")).to_vector();
  EXPECT_NEAR(sample_std(fc1, 0, fc1.size()), mlp, 0.05 * mlp);
  EXPECT_NEAR(sample_std(fc2, 0, fc2.size()), mlp, 0.05 * mlp);
}

}  // namespace
}  // namespace vt
