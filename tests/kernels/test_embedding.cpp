// Embedding lookup/scatter-add vs loops, the DiT timestep embedding and the
// 2D sin-cos table vs their closed forms evaluated here in double.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "kernels/embedding.h"

namespace vt {
namespace {

Tensor ids_tensor(const std::vector<int32_t>& v) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::I32);
  for (size_t i = 0; i < v.size(); ++i) t.i32()[i] = v[i];
  return t;
}

TEST(Embedding, LookupAndScatterAddWithDuplicates) {
  const int64_t V = 5, D = 3;
  Philox rng(1, 1);
  std::vector<float> tv(V * D), gv(4 * D);
  for (auto& x : tv) x = static_cast<float>(rng.normal());
  for (auto& x : gv) x = static_cast<float>(rng.normal());
  const std::vector<int32_t> ids = {3, 0, 3, 4};
  Tensor table = Tensor::from_vector(tv, {V, D}), out = Tensor::empty({4, D});
  embedding_forward(table, ids_tensor(ids), out);
  for (int64_t b = 0; b < 4; ++b)
    for (int64_t d = 0; d < D; ++d) ASSERT_EQ(out.f32()[b * D + d], tv[ids[b] * D + d]);

  Tensor dtable = Tensor::full({V, D}, 0.25f);  // parameter gradient: accumulates
  embedding_backward(Tensor::from_vector(gv, {4, D}), ids_tensor(ids), dtable);
  for (int64_t v = 0; v < V; ++v)
    for (int64_t d = 0; d < D; ++d) {
      double s = 0.25;
      for (int64_t b = 0; b < 4; ++b)
        if (ids[b] == v) s += gv[b * D + d];
      ASSERT_NEAR(dtable.f32()[v * D + d], s, 1e-6) << "row " << v;
    }
}

TEST(Embedding, RejectsOutOfRangeIds) {
  Tensor table = Tensor::zeros({5, 3}), out = Tensor::empty({2, 3});
  EXPECT_THROW(embedding_forward(table, ids_tensor({1, 5}), out), std::out_of_range);
  EXPECT_THROW(embedding_forward(table, ids_tensor({-1, 0}), out), std::out_of_range);
  EXPECT_THROW(embedding_backward(out, ids_tensor({0, 7}), table), std::out_of_range);
  EXPECT_THROW(embedding_forward(table, Tensor::zeros({2}), out), std::invalid_argument);  // F32 ids
}

double dit_timestep(double t, int64_t k, int64_t dim) {
  const int64_t half = dim / 2;
  if (dim % 2 && k == dim - 1) return 0.0;
  const int64_t kk = k < half ? k : k - half;
  const double arg = t * std::exp(-std::log(10000.0) * static_cast<double>(kk) / static_cast<double>(half));
  return k < half ? std::cos(arg) : std::sin(arg);
}

TEST(Embedding, TimestepEmbeddingClosedForm) {
  const std::vector<float> ts = {0.0f, 1.0f, 3.5f, 250.0f, 999.0f};
  for (int64_t dim : {256, 7}) {
    Tensor out = Tensor::full({static_cast<int64_t>(ts.size()), dim}, 9.0f);
    timestep_embedding(Tensor::from_vector(ts, {static_cast<int64_t>(ts.size())}), out);
    for (size_t b = 0; b < ts.size(); ++b)
      for (int64_t k = 0; k < dim; ++k) {
        // DiT rounds freq and t*freq to float32: an argument error of about
        // t * 1.5e-7, visible as such in cos/sin (see kernels/embedding.h).
        const double tol = 1e-6 + 3e-7 * ts[b];
        ASSERT_NEAR(out.f32()[b * dim + k], dit_timestep(ts[b], k, dim), tol) << "t=" << ts[b] << " k=" << k;
      }
  }
}

TEST(Embedding, SinCos2DClosedForm) {
  const int64_t gh = 3, gw = 4, D = 16, q = D / 4;
  Tensor out = Tensor::empty({1, gh * gw, D});
  sincos_pos_embed_2d(gh, gw, out);
  for (int64_t i = 0; i < gh; ++i)
    for (int64_t j = 0; j < gw; ++j)
      for (int64_t c = 0; c < D; ++c) {
        // First half: column j; second half: row i; each [sin, cos].
        const double pos = c < D / 2 ? static_cast<double>(j) : static_cast<double>(i);
        const int64_t cc = c % (D / 2);
        const double omega = std::pow(10000.0, -static_cast<double>(cc % q) / q);
        const double ref = cc < q ? std::sin(pos * omega) : std::cos(pos * omega);
        ASSERT_NEAR(out.f32()[(i * gw + j) * D + c], ref, 1e-7) << i << "," << j << "," << c;
      }
  EXPECT_THROW(sincos_pos_embed_2d(gh, gw, Tensor::empty({gh * gw, 18})), std::invalid_argument);
  EXPECT_THROW(sincos_pos_embed_2d(gh, gw, Tensor::empty({gh * gw + 1, 16})), std::invalid_argument);
}

}  // namespace
}  // namespace vt
