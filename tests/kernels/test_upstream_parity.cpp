// Parity with the upstream PyTorch/numpy code (DiT timestep_embedding,
// get_2d_sincos_pos_embed, unpatchify; torch conv2d; timm Attention), via
// tests/fixtures/kernels_upstream_parity.safetensors written by
// tools/make_kernel_fixtures.py.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/safetensors.h"
#include "core/tensor.h"
#include "kernels/attention.h"
#include "kernels/embedding.h"
#include "kernels/patch.h"

namespace vt {
namespace {

class UpstreamParity : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tensors_ = load_safetensors(std::string(VT_FIXTURES_DIR) + "/kernels_upstream_parity.safetensors");
  }
  static const Tensor& get(const std::string& name) { return tensors_.at(name); }
  static void expect_close(const Tensor& got, const Tensor& want, double atol, const std::string& what) {
    ASSERT_EQ(got.shape(), want.shape()) << what;
    std::vector<float> g = got.to_vector(), w = want.to_vector();
    for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], w[i], atol) << what << "[" << i << "]";
  }
  static std::map<std::string, Tensor> tensors_;
};
std::map<std::string, Tensor> UpstreamParity::tensors_;

TEST_F(UpstreamParity, TimestepEmbeddingMatchesDiT) {
  const Tensor& t = get("timestep.t");
  for (int64_t dim : {256, 7}) {
    Tensor out = Tensor::empty({t.size(0), dim});
    timestep_embedding(t, out);
    // torch's float32 exp is not always correctly rounded (2 of DiT's 128
    // frequencies differ by an ulp from ours), and an ulp of freq moves
    // t * freq by t * freq * 6e-8; the tolerance scales with t accordingly.
    const Tensor& want = get("timestep.emb" + std::to_string(dim));
    std::vector<float> g = out.to_vector(), w = want.to_vector();
    ASSERT_EQ(out.shape(), want.shape());
    for (int64_t b = 0; b < t.size(0); ++b)
      for (int64_t k = 0; k < dim; ++k) {
        const size_t i = static_cast<size_t>(b * dim + k);
        ASSERT_NEAR(g[i], w[i], 1e-6 + 1.5e-7 * t.f32()[b]) << "t=" << t.f32()[b] << " k=" << k;
      }
  }
}

TEST_F(UpstreamParity, PosEmbed2DMatchesDiT) {
  Tensor out = Tensor::empty({16, 32});
  sincos_pos_embed_2d(4, 4, out);
  expect_close(out, get("pos2d.grid4_d32"), 1e-7, "pos2d");
}

TEST_F(UpstreamParity, UnpatchifyMatchesDiT) {
  const Tensor& want = get("unpatchify.image");
  Tensor img = Tensor::empty(want.shape());
  unpatchify(get("unpatchify.tokens"), 2, img);
  expect_close(img, want, 0.0, "image");
}

TEST_F(UpstreamParity, PatchifyGemmMatchesConv2d) {
  const Tensor& image = get("conv.image");
  const Tensor& weight = get("conv.weight");  // [D, C, p, p]
  const int64_t D = weight.size(0), F = weight.numel() / D;
  Tensor patches = Tensor::empty({image.size(0), 9, F});
  patchify(image, 2, patches);
  // The GEMM with the weight viewed as [D, C*p*p], as a double loop.
  Tensor out = Tensor::empty({image.size(0), 9, D});
  const float* pt = patches.f32();
  const float* w = weight.f32();
  for (int64_t r = 0; r < image.size(0) * 9; ++r)
    for (int64_t d = 0; d < D; ++d) {
      double s = 0;
      for (int64_t f = 0; f < F; ++f) s += static_cast<double>(pt[r * F + f]) * w[d * F + f];
      out.f32()[r * D + d] = static_cast<float>(s);
    }
  expect_close(out, get("conv.out"), 1e-5, "conv");
}

TEST_F(UpstreamParity, AttentionMatchesTimm) {
  const Tensor& qkv = get("attn.qkv");
  Tensor out = Tensor::empty({2, 5, 8}), probs = Tensor::empty({2, 2, 5, 5});
  attention_forward(qkv, 2, out, probs);
  expect_close(out, get("attn.out"), 2e-6, "out");
  Tensor dqkv = Tensor::empty(qkv.shape());
  attention_backward(qkv, probs, get("attn.r"), 2, dqkv);
  expect_close(dqkv, get("attn.dqkv"), 1e-5, "dqkv");
}

}  // namespace
}  // namespace vt
