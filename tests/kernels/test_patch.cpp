// Patchify/unpatchify against index formulas written out here, the patch
// embedding against a direct strided convolution, backward functions by the
// adjoint identity <f(x), y> = <x, f^T(y)> (exact for these linear maps), and
// cls-token / position-embedding ops against naive loops.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "kernels/patch.h"

namespace vt {
namespace {

Tensor random_tensor(const Shape& shape, uint64_t stream) {
  Philox rng(99, stream);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_vector(v, shape);
}

double dot(const Tensor& a, const Tensor& b) {
  std::vector<float> x = a.to_vector(), y = b.to_vector();
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i) s += static_cast<double>(x[i]) * y[i];
  return s;
}

constexpr int64_t B = 2, C = 3, H = 6, W = 4, P = 2, h = H / P, w = W / P, N = h * w, F = C * P * P;

TEST(Patch, PatchifyIndexFormula) {
  Tensor img = random_tensor({B, C, H, W}, 1);
  Tensor pt = Tensor::empty({B, N, F});
  patchify(img, P, pt);
  const float* x = img.f32();
  const float* y = pt.f32();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < h; ++i)
      for (int64_t j = 0; j < w; ++j)
        for (int64_t c = 0; c < C; ++c)
          for (int64_t a = 0; a < P; ++a)
            for (int64_t e = 0; e < P; ++e)
              ASSERT_EQ(y[(b * N + i * w + j) * F + c * P * P + a * P + e],
                        x[((b * C + c) * H + i * P + a) * W + j * P + e]);
}

TEST(Patch, PatchifyGemmEqualsStridedConvolution) {
  // timm PatchEmbed: Conv2d(C, D, kernel=P, stride=P); weight [D, C, P, P].
  const int64_t D = 5;
  Tensor img = random_tensor({B, C, H, W}, 2), wt = random_tensor({D, C, P, P}, 3);
  Tensor pt = Tensor::empty({B, N, F});
  patchify(img, P, pt);
  const float* x = img.f32();
  const float* k = wt.f32();
  const float* y = pt.f32();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t j = 0; j < w; ++j) {
          double conv = 0, gemm = 0;
          for (int64_t c = 0; c < C; ++c)
            for (int64_t a = 0; a < P; ++a)
              for (int64_t e = 0; e < P; ++e)
                conv += static_cast<double>(k[((d * C + c) * P + a) * P + e]) * x[((b * C + c) * H + i * P + a) * W + j * P + e];
          for (int64_t f = 0; f < F; ++f) gemm += static_cast<double>(y[(b * N + i * w + j) * F + f]) * k[d * F + f];
          ASSERT_NEAR(gemm, conv, 1e-9);
        }
}

TEST(Patch, UnpatchifyIndexFormula) {
  // docs/recipes.md §8: pixel (c, i p + a, j p + b) = token i w + j, feature (a p + b) C + c.
  Tensor tok = random_tensor({B, N, F}, 4);
  Tensor img = Tensor::empty({B, C, H, W});
  unpatchify(tok, P, img);
  const float* t = tok.f32();
  const float* x = img.f32();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < h; ++i)
        for (int64_t a = 0; a < P; ++a)
          for (int64_t j = 0; j < w; ++j)
            for (int64_t e = 0; e < P; ++e)
              ASSERT_EQ(x[((b * C + c) * H + i * P + a) * W + j * P + e], t[(b * N + i * w + j) * F + (a * P + e) * C + c]);
}

TEST(Patch, UnpatchifyOfPatchifyIsTheFeaturePermutation) {
  Tensor img = random_tensor({B, C, H, W}, 5);
  Tensor pt = Tensor::empty({B, N, F}), back = Tensor::empty({B, C, H, W});
  patchify(img, P, pt);
  unpatchify(pt, P, back);
  const float* x = img.f32();
  const float* y = back.f32();
  // Output (c, ip+a, jp+e) holds feature f = (aP + e)C + c of patch (i, j),
  // which patchify filled from channel f / P^2, offset (f / P) % P, f % P.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t yy = 0; yy < H; ++yy)
        for (int64_t xx = 0; xx < W; ++xx) {
          const int64_t i = yy / P, a = yy % P, j = xx / P, e = xx % P;
          const int64_t f = (a * P + e) * C + c;
          const int64_t c2 = f / (P * P), a2 = (f / P) % P, e2 = f % P;
          ASSERT_EQ(y[((b * C + c) * H + yy) * W + xx], x[((b * C + c2) * H + i * P + a2) * W + j * P + e2]);
        }
  // With one channel the two feature orders coincide: an exact round trip.
  Tensor one = random_tensor({B, 1, H, W}, 6), p1 = Tensor::empty({B, N, P * P}), r1 = Tensor::empty({B, 1, H, W});
  patchify(one, P, p1);
  unpatchify(p1, P, r1);
  EXPECT_EQ(one.to_vector(), r1.to_vector());
}

TEST(Patch, BackwardsAreAdjoints) {
  Tensor img = random_tensor({B, C, H, W}, 7), tok = random_tensor({B, N, F}, 8);
  Tensor pt = Tensor::empty({B, N, F}), dimg = Tensor::full({B, C, H, W}, 3.0f);
  patchify(img, P, pt);
  patchify_backward(tok, P, dimg);
  EXPECT_NEAR(dot(pt, tok), dot(img, dimg), 1e-9);

  Tensor up = Tensor::empty({B, C, H, W}), dtok = Tensor::full({B, N, F}, 3.0f);
  unpatchify(tok, P, up);
  unpatchify_backward(img, P, dtok);
  EXPECT_NEAR(dot(up, img), dot(tok, dtok), 1e-9);
  // Both are permutations: the adjoint is the inverse.
  Tensor again = Tensor::empty({B, N, F});
  unpatchify_backward(up, P, again);
  EXPECT_EQ(again.to_vector(), tok.to_vector());
}

TEST(Patch, RejectsIndivisibleImage) {
  EXPECT_THROW(patchify(Tensor::zeros({1, 3, 5, 4}), 2, Tensor::empty({1, 4, 12})), std::invalid_argument);
  EXPECT_THROW(patchify(Tensor::zeros({1, 3, 4, 4}), 2, Tensor::empty({1, 4, 11})), std::invalid_argument);
  EXPECT_THROW(unpatchify(Tensor::zeros({1, 4, 12}), 2, Tensor::empty({1, 3, 4, 6})), std::invalid_argument);
}

TEST(ClsToken, ConcatAndBackward) {
  const int64_t Nt = 3, D = 4;
  Tensor x = random_tensor({B, Nt, D}, 9), cls = random_tensor({1, 1, D}, 10);
  Tensor out = Tensor::empty({B, Nt + 1, D});
  cls_concat(x, cls, out);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d) {
      ASSERT_EQ(out.f32()[(b * (Nt + 1)) * D + d], cls.f32()[d]);
      for (int64_t n = 0; n < Nt; ++n) ASSERT_EQ(out.f32()[(b * (Nt + 1) + 1 + n) * D + d], x.f32()[(b * Nt + n) * D + d]);
    }
  Tensor g = random_tensor({B, Nt + 1, D}, 11);
  Tensor dx = Tensor::full({B, Nt, D}, 5.0f);
  Tensor dcls = Tensor::full({1, 1, D}, 0.5f);  // accumulates onto this
  cls_concat_backward(g, dx, dcls);
  for (int64_t d = 0; d < D; ++d) {
    double s = 0.5;
    for (int64_t b = 0; b < B; ++b) s += g.f32()[b * (Nt + 1) * D + d];
    ASSERT_NEAR(dcls.f32()[d], s, 1e-6);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t n = 0; n < Nt; ++n) ASSERT_EQ(dx.f32()[(b * Nt + n) * D + d], g.f32()[(b * (Nt + 1) + 1 + n) * D + d]);
  }
  EXPECT_THROW(cls_concat(x, Tensor::zeros({D + 1}), out), std::invalid_argument);
}

TEST(ClsToken, SelectAndAdjoint) {
  const int64_t T = 4, D = 3;
  Tensor x = random_tensor({B, T, D}, 12), out = Tensor::full({B, D}, 7.0f);
  cls_select(x, out);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d) ASSERT_EQ(out.f32()[b * D + d], x.f32()[b * T * D + d]);
  // The adjoint overwrites all of dx: row 0 from dout, the others zero.
  Tensor dout = random_tensor({B, D}, 13), dx = Tensor::full({B, T, D}, 7.0f);
  cls_select_backward(dout, dx);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d)
        ASSERT_EQ(dx.f32()[(b * T + t) * D + d], t == 0 ? dout.f32()[b * D + d] : 0.0f);
  EXPECT_NEAR(dot(out, dout), dot(x, dx), 1e-5);  // <select x, g> = <x, select^T g>
  EXPECT_THROW(cls_select(x, Tensor::empty({B, D + 1})), std::invalid_argument);
  EXPECT_THROW(cls_select_backward(Tensor::empty({B + 1, D}), dx), std::invalid_argument);
}

TEST(PosEmbed, AddAndBackward) {
  const int64_t T = 5, D = 3;
  Tensor x = random_tensor({B, T, D}, 12), pos = random_tensor({1, T, D}, 13);
  Tensor out = Tensor::empty({B, T, D});
  pos_embed_add(x, pos, out);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T * D; ++i) ASSERT_FLOAT_EQ(out.f32()[b * T * D + i], x.f32()[b * T * D + i] + pos.f32()[i]);
  Tensor inplace = x.clone();
  pos_embed_add(inplace, pos, inplace);
  EXPECT_EQ(inplace.to_vector(), out.to_vector());

  Tensor g = random_tensor({B, T, D}, 14);
  Tensor dpos = Tensor::full({T, D}, -1.0f);
  pos_embed_add_backward(g, dpos);
  for (int64_t i = 0; i < T * D; ++i) {
    double s = -1.0;
    for (int64_t b = 0; b < B; ++b) s += g.f32()[b * T * D + i];
    ASSERT_NEAR(dpos.f32()[i], s, 1e-6);
  }
  EXPECT_THROW(pos_embed_add(x, Tensor::zeros({T + 1, D}), out), std::invalid_argument);
}

}  // namespace
}  // namespace vt
