// Parity with the PyTorch reference (tools/make_backbone_fixtures.py): for
// DeiT and DiT and the ten norm schemes (pre, post, siamese and its two
// ablations, mixln, deepnorm, residual, hybrid, spannorm), the C++ backbone loaded with the
// fixture's parameters must reproduce the output and every gradient of
// loss = sum(output * loss_weight) within 1e-5 (max error relative to the
// tensor's largest reference magnitude; the reference is float64 arithmetic).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "backbone/backbone.h"
#include "core/safetensors.h"

namespace vt {
namespace {

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t.contiguous().to_vector()) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

// Max error relative to the reference's largest magnitude; a reference that
// is zero up to float64 rounding (below 1e-6 of `scale`; the gradient of
// attn.k_norm.bias is: softmax ignores a shift shared by all keys) is
// measured against `scale`, the fixture's largest gradient, since float32
// sums cancelling to zero leave noise of that order times epsilon.
double rel_err(const Tensor& got, const Tensor& want, double scale = 0) {
  auto a = got.contiguous().to_vector(), b = want.contiguous().to_vector();
  double e = 0;
  for (size_t i = 0; i < a.size(); ++i) e = std::max(e, std::fabs(static_cast<double>(a[i]) - b[i]));
  double m = max_abs(want);
  if (m < 1e-6 * scale) m = scale;
  return m > 0 ? e / m : e;
}

BackboneConfig config_from(const SafetensorsMetadata& m) {
  BackboneConfig c;
  c.variant = m.at("variant") == "dit" ? ModelVariant::DiT : ModelVariant::DeiT;
  c.scheme = norm_scheme_from_name(m.at("scheme"));
  c.normalized_input = m.at("normalized_input") == "true";
  c.depth_scaling = m.at("depth_scaling") == "true";
  c.dim = std::stoll(m.at("dim"));
  c.depth = std::stoll(m.at("depth"));
  c.heads = std::stoll(m.at("heads"));
  c.mlp_ratio = std::stod(m.at("mlp_ratio"));
  c.gelu = m.at("gelu") == "tanh" ? Activation::GeluTanh : Activation::GeluErf;
  c.eps = std::stof(m.at("eps"));
  if (m.count("mixln_alpha")) c.mixln_alpha = std::stod(m.at("mixln_alpha"));
  return c;
}

class BackboneFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(BackboneFixture, OutputAndAllGradientsMatchPyTorch) {
  const std::string path = std::string(VT_FIXTURES_DIR) + "/backbone_" + GetParam() + ".safetensors";
  SafetensorsMetadata meta;
  auto t = load_safetensors(path, &meta);
  const BackboneConfig cfg = config_from(meta);
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  std::map<std::string, Tensor> params;
  for (const auto& kv : t)
    if (kv.first.rfind("blocks.", 0) == 0 ||
        (kv.first.find('.') != std::string::npos && kv.first.rfind("grad.", 0) != 0 &&
         kv.first.rfind("input.", 0) != 0))
      params[kv.first] = kv.second;
  store.load(params, /*strict=*/true);  // names and shapes must match exactly

  const Tensor h = t.at("input.h");
  const Tensor c = cfg.conditioned() ? t.at("input.c") : Tensor();
  Tensor out = Tensor::zeros(h.shape());
  bb.forward(h, c, out);
  EXPECT_LT(rel_err(out, t.at("output")), 1e-5) << "output";

  store.zero_grad();
  Tensor dh = Tensor::zeros(h.shape());
  Tensor dc = cfg.conditioned() ? Tensor::zeros(c.shape()) : Tensor();
  bb.backward(t.at("loss_weight"), dh, dc);
  EXPECT_LT(rel_err(dh, t.at("grad.input.h")), 1e-5) << "grad.input.h";
  if (cfg.conditioned()) {
    EXPECT_LT(rel_err(dc, t.at("grad.input.c")), 1e-5) << "grad.input.c";
  }
  double scale = 0;
  for (const auto& kv : t)
    if (kv.first.rfind("grad.", 0) == 0) scale = std::max(scale, max_abs(kv.second));
  int checked = 0;
  for (const ParamInfo& p : store.infos()) {
    const Tensor& want = t.at("grad." + p.name);
    EXPECT_LT(rel_err(store.grad(store.id(p.name)), want, scale), 1e-5) << "grad." << p.name;
    ++checked;
  }
  EXPECT_EQ(checked, static_cast<int>(params.size()));
}

INSTANTIATE_TEST_SUITE_P(All, BackboneFixture,
                         ::testing::Values("deit_pre", "deit_post", "deit_siamese", "deit_siamese_noinput",
                                           "deit_siamese_nodepth", "deit_mixln", "deit_deepnorm", "deit_residual",
                                           "deit_hybrid", "deit_spannorm", "dit_pre", "dit_post", "dit_siamese",
                                           "dit_siamese_noinput", "dit_siamese_nodepth", "dit_mixln",
                                           "dit_deepnorm", "dit_residual", "dit_hybrid", "dit_spannorm"));

}  // namespace
}  // namespace vt
