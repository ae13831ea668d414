// Parity of diffusion/dit_model with tools/dit_model_fixture.py (a float64
// functional re-implementation of DiT's models.py and the released
// SiameseNorm DiT): forward output and every parameter gradient of
// loss = sum(output * loss_weight), for the pre-norm and siamese schemes.
// Plus the DiT initialisation rules, presets and label dropout.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/safetensors.h"
#include "diffusion/dit_model.h"

namespace vt {
namespace {

double rel_err(const Tensor& got, const Tensor& want) {
  auto a = got.contiguous().to_vector(), b = want.contiguous().to_vector();
  EXPECT_EQ(a.size(), b.size());
  double m = 0, e = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(b[i])));
    e = std::max(e, std::fabs(static_cast<double>(a[i]) - b[i]));
  }
  return m > 0 ? e / m : e;
}

DiTConfig config_from(const SafetensorsMetadata& m) {
  DiTConfig c;
  c.input_size = std::stoll(m.at("input_size"));
  c.in_channels = std::stoll(m.at("in_channels"));
  c.patch = std::stoll(m.at("patch"));
  c.hidden = std::stoll(m.at("hidden"));
  c.depth = std::stoll(m.at("depth"));
  c.heads = std::stoll(m.at("heads"));
  c.num_classes = std::stoll(m.at("num_classes"));
  c.scheme = norm_scheme_from_name(m.at("scheme"));
  return c;
}

class DiTFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(DiTFixture, OutputAndAllGradientsMatchPyTorch) {
  SafetensorsMetadata meta;
  auto t = load_safetensors(std::string(VT_FIXTURES_DIR) + "/diffusion/dit_" + GetParam() + ".safetensors", &meta);
  const DiTConfig cfg = config_from(meta);
  DiT model(cfg);
  ParamStore& store = model.params();
  std::map<std::string, Tensor> params;
  for (const auto& kv : t)
    if (kv.first.rfind("grad.", 0) != 0 && kv.first.rfind("input.", 0) != 0 && kv.first != "output" &&
        kv.first != "loss_weight")
      params[kv.first] = kv.second;
  store.load(params, /*strict=*/true);  // the state-dict names and shapes are DiT's exactly
  // Our own table must equal the one the fixture computed independently.
  const Tensor pos_file = store.value(store.id("pos_embed")).clone();
  model.set_pos_embed();
  EXPECT_LT(rel_err(store.value(store.id("pos_embed")), pos_file), 1e-6);

  const Tensor x = t.at("input.x");
  Tensor out = Tensor::empty(t.at("output").shape());
  model.forward(x, t.at("input.t"), t.at("input.y"), out);
  EXPECT_LT(rel_err(out, t.at("output")), 1e-5);

  store.zero_grad();
  model.backward(t.at("loss_weight"));
  int checked = 0;
  for (const auto& info : store.infos()) {
    if (info.name == "pos_embed") {
      for (float g : store.grad(store.id(info.name)).to_vector())
        ASSERT_EQ(g, 0.0f) << "the frozen pos_embed got a gradient";
      continue;
    }
    const Tensor& want = t.at("grad." + info.name);
    // dW of t_embedder.mlp.0 is an outer product with the 256-d sinusoid,
    // whose float32 frequencies torch rounds from its own (1-ulp) expf: at
    // t = 999 that moves an argument by up to 999 * 6e-8 = 6e-5, so this
    // one gradient agrees to ~1.5e-5 only. Everything else is held to 1e-5.
    const double tol = info.name == "t_embedder.mlp.0.weight" ? 5e-5 : 1e-5;
    EXPECT_LT(rel_err(store.grad(store.id(info.name)), want), tol) << info.name;
    ++checked;
  }
  EXPECT_GT(checked, 20);
}

INSTANTIATE_TEST_SUITE_P(Schemes, DiTFixture, ::testing::Values("pre", "siamese"));

TEST(DiT, InitFollowsDiT) {
  DiTConfig c;
  c.input_size = 8, c.in_channels = 3, c.patch = 2, c.hidden = 32, c.depth = 2, c.heads = 4, c.num_classes = 10;
  DiT model(c);
  ParamStore& store = model.params();
  model.init_weights(7);
  auto vec = [&](const std::string& n) { return store.value(store.id(n)).to_vector(); };
  auto max_abs = [](const std::vector<float>& v) {
    double m = 0;
    for (float f : v) m = std::max(m, std::fabs(static_cast<double>(f)));
    return m;
  };
  for (const char* zero : {"final_layer.linear.weight", "final_layer.linear.bias",
                           "final_layer.adaLN_modulation.1.weight", "blocks.1.adaLN_modulation.1.weight",
                           "x_embedder.proj.bias", "t_embedder.mlp.0.bias"})
    EXPECT_EQ(max_abs(vec(zero)), 0.0) << zero;
  // Xavier-uniform bound on the patch conv's [D, C p p] view: sqrt(6 / (12 + 32)).
  const double bound = std::sqrt(6.0 / (3 * 2 * 2 + 32));
  const auto xw = vec("x_embedder.proj.weight");
  EXPECT_LE(max_abs(xw), bound);
  EXPECT_GT(max_abs(xw), 0.8 * bound);
  // N(0, 0.02): sample std of the label table (11 x 32 values).
  const auto tab = vec("y_embedder.embedding_table.weight");
  ASSERT_EQ(tab.size(), 11u * 32u);  // the null class row
  double s2 = 0;
  for (float f : tab) s2 += static_cast<double>(f) * f;
  EXPECT_NEAR(std::sqrt(s2 / tab.size()), 0.02, 0.003);
  // With zero final layers the initial output is exactly zero.
  Tensor x = Tensor::full({2, 3, 8, 8}, 0.5f), t = Tensor::from_vector({3.0f, 500.0f}, {2});
  Tensor y = Tensor::empty({2}, DType::I32);
  y.i32()[0] = 1, y.i32()[1] = 10;
  Tensor out = Tensor::empty({2, 6, 8, 8});
  model.forward(x, t, y, out);
  EXPECT_EQ(max_abs(out.to_vector()), 0.0);
  EXPECT_EQ(model.num_params(), store.numel() - 16 * 32);
}

TEST(DiT, PresetsAndValidation) {
  const DiTConfig l4 = dit_preset("DiT-L/4");
  EXPECT_EQ(l4.depth, 24);
  EXPECT_EQ(l4.hidden, 1024);
  EXPECT_EQ(l4.heads, 16);
  EXPECT_EQ(l4.patch, 4);
  EXPECT_EQ(dit_preset("DiT-XL/2").hidden, 1152);
  EXPECT_EQ(dit_preset("DiT-S/8").heads, 6);
  EXPECT_EQ(dit_preset("DiT-B/2").hidden, 768);
  EXPECT_THROW(dit_preset("DiT-M/2"), std::invalid_argument);
  EXPECT_THROW(dit_preset("DiT-S/3"), std::invalid_argument);
  DiTConfig bad;
  bad.input_size = 30, bad.patch = 4;
  EXPECT_THROW(bad.validate(), std::invalid_argument);
}

TEST(DiT, LabelDropoutRateAndDeterminism) {
  Tensor y = Tensor::empty({20000}, DType::I32);
  y.fill(3);
  drop_labels(y, 0.1, 1000, 5, 42);
  int64_t dropped = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    ASSERT_TRUE(y.i32()[i] == 3 || y.i32()[i] == 1000);
    dropped += y.i32()[i] == 1000;
  }
  // Binomial(20000, 0.1): std 42, so +-200 is ~5 sigma.
  EXPECT_NEAR(static_cast<double>(dropped), 2000.0, 200.0);
  Tensor y2 = Tensor::empty({20000}, DType::I32);
  y2.fill(3);
  drop_labels(y2, 0.1, 1000, 5, 42);
  for (int64_t i = 0; i < y.numel(); ++i) ASSERT_EQ(y.i32()[i], y2.i32()[i]);
}

// Data parallel: rank r of world w holds global rows r, r + w, ...; each
// row's draw is the one-process batch's draw of that row.
TEST(DiT, LabelDropoutOfARankIsTheGlobalBatchsRows) {
  const int64_t global = 60;
  Tensor all = Tensor::empty({global}, DType::I32);
  for (int64_t i = 0; i < global; ++i) all.i32()[i] = static_cast<int32_t>(i % 7);
  drop_labels(all, 0.3, 1000, 9, 4);
  for (int world : {2, 3, 4}) {
    for (int rank = 0; rank < world; ++rank) {
      Tensor part = Tensor::empty({global / world}, DType::I32);
      for (int64_t j = 0; j < part.numel(); ++j) part.i32()[j] = static_cast<int32_t>((j * world + rank) % 7);
      drop_labels(part, 0.3, 1000, 9, 4, rank, world);
      for (int64_t j = 0; j < part.numel(); ++j)
        ASSERT_EQ(part.i32()[j], all.i32()[j * world + rank]) << "world " << world << " rank " << rank << " row " << j;
    }
  }
  Tensor y = Tensor::empty({4}, DType::I32);
  EXPECT_THROW(drop_labels(y, 0.3, 1000, 9, 4, 2, 2), std::invalid_argument);
}

}  // namespace
}  // namespace vt
