// adaLN modulate and gate: forward vs a double loop, backward vs central
// finite differences of that loop, with shift/scale/gate taken as column
// slices of one [B, 6D] adaLN output (strided rows), as DiT chunks it.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <utility>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "gradcheck.h"
#include "kernels/modulate.h"

namespace vt {
namespace {

constexpr int64_t B = 2, T = 3, D = 5;

Tensor random_tensor(const Shape& shape, uint64_t stream) {
  Philox rng(42, stream);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = static_cast<float>(rng.normal());
  return Tensor::from_vector(v, shape);
}

std::vector<double> to_double(const Tensor& t) {
  std::vector<float> v = t.contiguous().to_vector();
  return std::vector<double>(v.begin(), v.end());
}

// Central differences with the step this file's references were tuned for.
std::vector<double> fd_grad(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x) {
  return gradcheck::central_differences(std::move(x), f, 1e-5);
}

// L = sum r * (x (1 + scale) + shift), the reference in double.
double modulate_loss(const std::vector<double>& x, const std::vector<double>& shift, const std::vector<double>& scale,
                     const std::vector<double>& r) {
  double s = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) {
        const size_t k = static_cast<size_t>((b * T + t) * D + d);
        s += r[k] * (x[k] * (1 + scale[b * D + d]) + shift[b * D + d]);
      }
  return s;
}

double gate_loss(const std::vector<double>& x, const std::vector<double>& gate, const std::vector<double>& r) {
  double s = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) {
        const size_t k = static_cast<size_t>((b * T + t) * D + d);
        s += r[k] * gate[b * D + d] * x[k];
      }
  return s;
}

void expect_near(const Tensor& got, const std::vector<double>& want, double tol, const char* what) {
  std::vector<float> g = got.contiguous().to_vector();
  ASSERT_EQ(g.size(), want.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) ASSERT_NEAR(g[i], want[i], tol) << what << "[" << i << "]";
}

TEST(Modulate, ForwardWithStridedChunks) {
  Tensor c = random_tensor({B, 6 * D}, 1);
  Tensor shift = c.slice(1, 0, D), scale = c.slice(1, D, 2 * D);
  Tensor x = random_tensor({B, T, D}, 2), out = Tensor::empty({B, T, D});
  modulate_forward(x, shift, scale, out);
  std::vector<double> xs = to_double(x), sh = to_double(shift), sc = to_double(scale), ref(xs.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d) {
        const size_t k = static_cast<size_t>((b * T + t) * D + d);
        ref[k] = xs[k] * (1 + sc[b * D + d]) + sh[b * D + d];
      }
  expect_near(out, ref, 1e-6, "out");
  Tensor inplace = x.clone();
  modulate_forward(inplace, shift, scale, inplace);
  EXPECT_EQ(inplace.to_vector(), out.to_vector());
}

TEST(Modulate, BackwardMatchesFiniteDifferences) {
  Tensor c = random_tensor({B, 6 * D}, 3);
  Tensor shift = c.slice(1, 0, D), scale = c.slice(1, D, 2 * D);
  Tensor x = random_tensor({B, T, D}, 4), r = random_tensor({B, T, D}, 5);
  std::vector<double> xs = to_double(x), sh = to_double(shift), sc = to_double(scale), rs = to_double(r);

  Tensor dc = Tensor::full({B, 6 * D}, 8.0f);  // gradients overwrite their slices
  Tensor dx = Tensor::full({B, T, D}, 8.0f);
  modulate_backward(r, x, scale, dx, dc.slice(1, 0, D), dc.slice(1, D, 2 * D));
  expect_near(dx, fd_grad([&](const std::vector<double>& v) { return modulate_loss(v, sh, sc, rs); }, xs), 1e-5, "dx");
  expect_near(dc.slice(1, 0, D), fd_grad([&](const std::vector<double>& v) { return modulate_loss(xs, v, sc, rs); }, sh),
              1e-5, "dshift");
  expect_near(dc.slice(1, D, 2 * D),
              fd_grad([&](const std::vector<double>& v) { return modulate_loss(xs, sh, v, rs); }, sc), 1e-5, "dscale");
  // Columns outside the two slices are untouched.
  for (int64_t b = 0; b < B; ++b)
    for (int64_t k = 2 * D; k < 6 * D; ++k) ASSERT_EQ(dc.f32()[b * 6 * D + k], 8.0f);

  // Undefined gradients are skipped; the others are unchanged.
  Tensor dx2 = Tensor::empty({B, T, D});
  modulate_backward(r, x, scale, dx2, Tensor(), Tensor());
  EXPECT_EQ(dx2.to_vector(), dx.to_vector());
}

TEST(Gate, ForwardBackwardAndResidual) {
  Tensor c = random_tensor({B, 6 * D}, 6);
  Tensor gate = c.slice(1, 2 * D, 3 * D);
  Tensor x = random_tensor({B, T, D}, 7), r = random_tensor({B, T, D}, 8);
  std::vector<double> xs = to_double(x), gs = to_double(gate), rs = to_double(r);

  Tensor out = Tensor::empty({B, T, D});
  gate_forward(x, gate, out);
  std::vector<double> ref(xs.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T * D; ++i) ref[b * T * D + i] = gs[b * D + i % D] * xs[b * T * D + i];
  expect_near(out, ref, 1e-6, "out");

  Tensor dx = Tensor::full({B, T, D}, 8.0f), dgate = Tensor::full({B, D}, 8.0f);
  gate_backward(r, x, gate, dx, dgate);
  expect_near(dx, fd_grad([&](const std::vector<double>& v) { return gate_loss(v, gs, rs); }, xs), 1e-5, "dx");
  expect_near(dgate, fd_grad([&](const std::vector<double>& v) { return gate_loss(xs, v, rs); }, gs), 1e-5, "dgate");

  Tensor res = r.clone();
  gate_residual_add(x, gate, 0.5f, res);
  for (size_t i = 0; i < ref.size(); ++i) ASSERT_NEAR(res.f32()[i], rs[i] + 0.5 * ref[i], 1e-6);
}

TEST(Modulate, RejectsBadShapes) {
  Tensor x = Tensor::zeros({B, T, D}), out = Tensor::empty({B, T, D});
  EXPECT_THROW(modulate_forward(x, Tensor::zeros({B, D + 1}), Tensor::zeros({B, D}), out), std::invalid_argument);
  EXPECT_THROW(gate_forward(x, Tensor::zeros({B + 1, D}), out), std::invalid_argument);
  // A column of a [D, B] tensor has non-unit stride along D.
  EXPECT_THROW(gate_forward(x, Tensor::zeros({D, B}).transpose(0, 1), out), std::invalid_argument);
}

}  // namespace
}  // namespace vt
