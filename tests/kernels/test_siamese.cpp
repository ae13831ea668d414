// Fused SiameseNorm kernels against their unfused LayerNorm compositions
// (forward and backward) and against central finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "core/philox.h"
#include "gradcheck.h"
#include "kernels/siamese.h"

namespace vt {
namespace {

Tensor randn(const Shape& s, uint64_t stream, float mean = 0.0f, float std = 1.0f) {
  Philox g(7, stream);
  Tensor t = Tensor::empty(s);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(g.normal(mean, std));
  return t;
}

double max_rel(const Tensor& a, const Tensor& b) {
  auto va = a.contiguous().to_vector(), vb = b.contiguous().to_vector();
  double m = 0, e = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(vb[i])));
    e = std::max(e, std::fabs(static_cast<double>(va[i]) - vb[i]));
  }
  return m > 0 ? e / m : e;
}

struct Case {
  std::string name;
  bool x, y, post, pre, input, affine_in, modulate;
};

const Case kCases[] = {
    {"deit_siamese", true, true, true, true, true, true, false},
    {"dit_siamese", true, true, true, true, true, false, true},
    {"no_input_norm", true, true, true, true, false, false, false},
    {"dit_no_input_norm", true, true, true, true, false, false, true},
    {"pre_norm", false, true, false, false, true, true, false},
    {"dit_pre_norm", false, true, false, false, true, false, true},
    {"post_plain", true, false, false, false, false, false, false},
    {"dit_merge", true, true, true, true, false, false, false},
};

constexpr int64_t kB = 3, kT = 7, kD = 19;  // D not a multiple of the SIMD width

struct KernelSetup {
  SiameseInputSpec s;
  Tensor mod;  // [B, 6D], shift/scale are column slices of it
};

KernelSetup make_setup(const Case& c) {
  KernelSetup st;
  SiameseInputSpec& s = st.s;
  if (c.x) s.x = randn({kB, kT, kD}, 1, 0.5f, 2.0f);
  if (c.y) s.y = randn({kB, kT, kD}, 2, -0.3f, 3.0f);
  auto norm = [](bool on, bool affine, uint64_t k) {
    SiameseNorm n;
    n.enabled = on;
    if (on && affine) {
      n.weight = randn({kD}, 10 + k, 1.0f, 0.3f);
      n.bias = randn({kD}, 20 + k, 0.0f, 0.2f);
    }
    return n;
  };
  s.post = norm(c.post, true, 1);
  s.pre = norm(c.pre, true, 2);
  s.input = norm(c.input, c.affine_in, 3);
  if (c.modulate) {
    st.mod = randn({kB, 6 * kD}, 30, 0.0f, 0.5f);
    s.shift = st.mod.slice(1, 3 * kD, 4 * kD);
    s.scale = st.mod.slice(1, 4 * kD, 5 * kD);
  }
  return st;
}

class SiameseKernels : public ::testing::TestWithParam<Case> {};

TEST_P(SiameseKernels, FusedMatchesUnfusedForwardAndBackward) {
  const Case c = GetParam();
  KernelSetup st = make_setup(c);
  const SiameseInputSpec& s = st.s;
  const Shape sh{kB, kT, kD};
  const int64_t R = kB * kT;
  Tensor u1 = Tensor::zeros(sh), z1 = Tensor::zeros(sh), m1 = Tensor::zeros({3, R}), r1 = Tensor::zeros({3, R});
  Tensor u2 = Tensor::zeros(sh), z2 = Tensor::zeros(sh), m2 = Tensor::zeros({3, R}), r2 = Tensor::zeros({3, R});
  siamese_input_forward(s, u1, z1, m1, r1);
  siamese_input_forward_unfused(s, u2, z2, m2, r2);
  EXPECT_LT(max_rel(z1, z2), 1e-6) << c.name;
  if (c.x) {
    EXPECT_LT(max_rel(u1, u2), 1e-6) << c.name;
  }
  EXPECT_LT(max_rel(m1, m2), 1e-6);
  EXPECT_LT(max_rel(r1, r2), 1e-6);

  // Recompute from saved statistics gives the same z.
  Tensor z3 = Tensor::zeros(sh);
  siamese_input_forward(s, Tensor(), z3, m1, r1, /*use_saved_stats=*/true);
  EXPECT_LT(max_rel(z3, z1), 1e-7);

  auto grads = [&](SiameseInputGrads& g) {
    g.dz = randn(sh, 40);
    if (c.x) g.du = randn(sh, 41);
    if (c.y) g.dy_pass = randn(sh, 42);
    if (c.x) g.dx = Tensor::zeros(sh);
    if (c.y) g.dy = Tensor::zeros(sh);
    auto pg = [&](const SiameseNorm& n, Tensor& w, Tensor& b) {
      if (n.enabled && n.weight.defined()) w = randn({kD}, 50);  // accumulate onto a non-zero start
      if (n.enabled && n.bias.defined()) b = randn({kD}, 51);
    };
    pg(s.post, g.post_dw, g.post_db);
    pg(s.pre, g.pre_dw, g.pre_db);
    pg(s.input, g.in_dw, g.in_db);
    if (c.modulate) {
      Tensor dmod = Tensor::zeros({kB, 6 * kD});
      g.dshift = dmod.slice(1, 3 * kD, 4 * kD);
      g.dscale = dmod.slice(1, 4 * kD, 5 * kD);
    }
  };
  SiameseInputGrads g1, g2;
  grads(g1);
  grads(g2);
  siamese_input_backward(s, m1, r1, g1);
  siamese_input_backward_unfused(s, m2, r2, g2);
  auto cmp = [&](const Tensor& a, const Tensor& b, const char* what) {
    if (a.defined()) {
      EXPECT_LT(max_rel(a, b), 2e-6) << c.name << " " << what;
    }
  };
  cmp(g1.dx, g2.dx, "dx");
  cmp(g1.dy, g2.dy, "dy");
  cmp(g1.post_dw, g2.post_dw, "post_dw");
  cmp(g1.post_db, g2.post_db, "post_db");
  cmp(g1.pre_dw, g2.pre_dw, "pre_dw");
  cmp(g1.pre_db, g2.pre_db, "pre_db");
  cmp(g1.in_dw, g2.in_dw, "in_dw");
  cmp(g1.in_db, g2.in_db, "in_db");
  cmp(g1.dshift, g2.dshift, "dshift");
  cmp(g1.dscale, g2.dscale, "dscale");
}

// Central differences of L = sum(z * R) + sum(u * Q) in double, against the
// fused backward: checks the backward independently of the oracle.
TEST_P(SiameseKernels, BackwardMatchesFiniteDifferences) {
  const Case c = GetParam();
  KernelSetup st = make_setup(c);
  SiameseInputSpec& s = st.s;
  const Shape sh{kB, kT, kD};
  const int64_t R = kB * kT;
  Tensor Rw = randn(sh, 60), Qw = randn(sh, 61);
  auto loss = [&]() {
    Tensor u = Tensor::zeros(sh), z = Tensor::zeros(sh), m = Tensor::zeros({3, R}), r = Tensor::zeros({3, R});
    siamese_input_forward(s, u, z, m, r);
    double L = 0;
    for (int64_t i = 0; i < z.numel(); ++i)
      L += static_cast<double>(z.f32()[i]) * Rw.f32()[i] + (c.x ? static_cast<double>(u.f32()[i]) * Qw.f32()[i] : 0.0);
    return L;
  };
  Tensor u = Tensor::zeros(sh), z = Tensor::zeros(sh), m = Tensor::zeros({3, R}), r = Tensor::zeros({3, R});
  siamese_input_forward(s, u, z, m, r);
  SiameseInputGrads g;
  g.dz = Rw;
  if (c.x) g.du = Qw, g.dx = Tensor::zeros(sh);
  if (c.y) g.dy = Tensor::zeros(sh);
  if (s.input.enabled && s.input.weight.defined()) g.in_dw = Tensor::zeros({kD}), g.in_db = Tensor::zeros({kD});
  if (s.post.enabled) g.post_dw = Tensor::zeros({kD}), g.post_db = Tensor::zeros({kD});
  if (s.pre.enabled) g.pre_dw = Tensor::zeros({kD});
  Tensor dmod;
  if (c.modulate) {
    dmod = Tensor::zeros({kB, 6 * kD});
    g.dshift = dmod.slice(1, 3 * kD, 4 * kD);
    g.dscale = dmod.slice(1, 4 * kD, 5 * kD);
  }
  siamese_input_backward(s, m, r, g);

  auto probe = [&](float* p, float analytic, const char* what) {
    const double fd = gradcheck::central_difference_at(p, 1e-2f * std::max(1.0f, std::fabs(*p)), loss);
    EXPECT_NEAR(analytic, fd, 2e-3 * std::max(1.0, std::fabs(fd)) + 2e-3) << c.name << " " << what;
  };
  for (int64_t i : {0L, 23L, R * kD - 1}) {
    if (c.x) probe(s.x.f32() + i, g.dx.f32()[i], "dx");
    if (c.y) probe(s.y.f32() + i, g.dy.f32()[i], "dy");
  }
  for (int64_t j : {0L, kD - 1}) {
    if (g.in_dw.defined()) probe(s.input.weight.f32() + j, g.in_dw.f32()[j], "in_dw");
    if (g.in_db.defined()) probe(s.input.bias.f32() + j, g.in_db.f32()[j], "in_db");
    if (g.post_dw.defined()) probe(s.post.weight.f32() + j, g.post_dw.f32()[j], "post_dw");
    if (g.post_db.defined()) probe(s.post.bias.f32() + j, g.post_db.f32()[j], "post_db");
    if (g.pre_dw.defined()) probe(s.pre.weight.f32() + j, g.pre_dw.f32()[j], "pre_dw");
  }
  if (c.modulate) {
    probe(st.mod.f32() + 1 * 6 * kD + 3 * kD + 2, dmod.f32()[1 * 6 * kD + 3 * kD + 2], "dshift");
    probe(st.mod.f32() + 2 * 6 * kD + 4 * kD + 5, dmod.f32()[2 * 6 * kD + 4 * kD + 5], "dscale");
  }
}

INSTANTIATE_TEST_SUITE_P(All, SiameseKernels, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

TEST(SiameseResidual, ForwardBackwardClosedForm) {
  const int64_t B = 2, T = 3, D = 5, R = B * T;
  Tensor u = randn({B, T, D}, 70), f = randn({B, T, D}, 71), y = randn({B, T, D}, 72);
  Tensor mod = randn({B, 6 * D}, 73), drop = Tensor::from_vector({0.0f, 1.25f}, {B});
  SiameseResidualSpec s{u, f, y, mod.slice(1, 2 * D, 3 * D), drop, 1.0f / std::sqrt(6.0f)};
  Tensor xo = Tensor::zeros({B, T, D}), yo = Tensor::zeros({B, T, D});
  siamese_residual_forward(s, xo, yo);
  Tensor dxo = randn({B, T, D}, 74), dyo = randn({B, T, D}, 75), df = Tensor::zeros({B, T, D});
  Tensor dmod = Tensor::zeros({B, 6 * D});
  siamese_residual_backward(s, dxo, dyo, df, dmod.slice(1, 2 * D, 3 * D));
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < D; ++j) {
      const int64_t b = r / T, i = r * D + j;
      const double g = mod.f32()[b * 6 * D + 2 * D + j], ds = drop.f32()[b];
      const double o = ds * g * f.f32()[i];
      EXPECT_NEAR(xo.f32()[i], u.f32()[i] + o / std::sqrt(6.0), 1e-6);
      EXPECT_NEAR(yo.f32()[i], y.f32()[i] + o, 1e-6);
      const double dout = dxo.f32()[i] / std::sqrt(6.0) + dyo.f32()[i];
      EXPECT_NEAR(df.f32()[i], ds * g * dout, 1e-6);
    }
  for (int64_t b = 0; b < B; ++b)
    for (int64_t j = 0; j < D; ++j) {
      double acc = 0;
      for (int64_t t = 0; t < T; ++t) {
        const int64_t i = (b * T + t) * D + j;
        acc += drop.f32()[b] * f.f32()[i] * (dxo.f32()[i] / std::sqrt(6.0) + dyo.f32()[i]);
      }
      EXPECT_NEAR(dmod.f32()[b * 6 * D + 2 * D + j], acc, 1e-5);
    }
  // In place (x_out = u, y_out = y) gives the same result.
  Tensor u2 = u.clone(), y2 = y.clone();
  SiameseResidualSpec s2 = s;
  s2.u = u2, s2.y = y2;
  siamese_residual_forward(s2, u2, y2);
  EXPECT_EQ(u2.to_vector(), xo.to_vector());
  EXPECT_EQ(y2.to_vector(), yo.to_vector());
}

// The fused residual + next input against the two ops in sequence, bit for
// bit, for every kCases entry as the next input (DiT cases with a gate,
// all with drop-path scales), with u updated in place as Block::forward does.
TEST_P(SiameseKernels, FusedResidualInputEqualsResidualThenInput) {
  const Case c = GetParam();
  KernelSetup st = make_setup(c);
  const Shape sh{kB, kT, kD};
  const int64_t R = kB * kT;
  Tensor f = randn(sh, 80), base = randn(sh, 81), y0 = randn(sh, 82, 0.2f, 2.0f);
  Tensor gates = randn({kB, 6 * kD}, 83), drop = Tensor::from_vector({1.25f, 0.0f, 1.25f}, {kB});
  // Runs the residual (u = base, y = y0) and the input of its new streams,
  // fused or as two calls, on fresh copies; returns x, y, u, z, mean, rstd.
  auto run = [&](bool fused) {
    Tensor u = base.clone(), y = c.y ? y0.clone() : Tensor(), x = c.x ? Tensor::zeros(sh) : Tensor();
    SiameseResidualSpec rs;
    if (c.x) rs.u = u;
    rs.f = f;
    if (c.y) rs.y = y;
    if (c.modulate) rs.gate = gates.slice(1, 2 * kD, 3 * kD);
    rs.drop_scale = drop;
    rs.inv_c = 0.5f;
    SiameseInputSpec next = st.s;
    next.x = x;
    next.y = y;
    Tensor uo = c.x ? u : Tensor();  // in place over the residual's base
    Tensor z = Tensor::zeros(sh), m = Tensor::zeros({3, R}), r = Tensor::zeros({3, R});
    if (fused) {
      siamese_residual_input_forward(rs, x, y, next, uo, z, m, r);
    } else {
      siamese_residual_forward(rs, x, y);
      siamese_input_forward(next, uo, z, m, r);
    }
    return std::vector<Tensor>{x, y, uo, z, m, r};
  };
  const auto a = run(true), b = run(false);
  const char* names[] = {"x", "y", "u", "z", "mean", "rstd"};
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].defined(), b[i].defined()) << names[i];
    if (a[i].defined()) {
      EXPECT_EQ(a[i].to_vector(), b[i].to_vector()) << c.name << " " << names[i];
    }
  }
}

TEST(SiameseResidualInput, StreamsMustBeTheResidualOutputs) {
  const Shape sh{2, 3, 4};
  Tensor u = Tensor::zeros(sh), f = Tensor::zeros(sh), y = Tensor::zeros(sh), x = Tensor::zeros(sh);
  SiameseResidualSpec rs;
  rs.u = u, rs.f = f, rs.y = y;
  SiameseInputSpec next;
  next.x = x.clone();  // not x_out
  next.y = y;
  Tensor z = Tensor::zeros(sh), m = Tensor::zeros({3, 6}), r = Tensor::zeros({3, 6});
  try {
    siamese_residual_input_forward(rs, x, y, next, Tensor(), z, m, r);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("siamese_residual_input_forward"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("x_out"), std::string::npos) << e.what();
  }
  next.x = x;
  SiameseResidualSpec no_y = rs;
  no_y.y = Tensor();  // the input reads y, which the residual does not write
  EXPECT_THROW(siamese_residual_input_forward(no_y, x, Tensor(), next, Tensor(), z, m, r), std::invalid_argument);
  EXPECT_NO_THROW(siamese_residual_input_forward(rs, x, y, next, Tensor(), z, m, r));
}

TEST(SiameseInput, BadShapesThrowWithNames) {
  SiameseInputSpec s;
  s.x = Tensor::zeros({2, 3, 4});
  s.y = Tensor::zeros({2, 3, 5});
  Tensor z = Tensor::zeros({2, 3, 4}), m = Tensor::zeros({3, 6}), r = Tensor::zeros({3, 6});
  try {
    siamese_input_forward(s, Tensor(), z, m, r);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("siamese_input_forward"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("[2, 3, 5]"), std::string::npos) << e.what();
  }
  s.y = Tensor::zeros({2, 3, 4});
  s.post.enabled = true;
  s.post.weight = Tensor::zeros({3});
  EXPECT_THROW(siamese_input_forward(s, Tensor(), z, m, r), std::invalid_argument);
  s.post.weight = Tensor::zeros({4});
  EXPECT_THROW(siamese_input_forward(s, Tensor(), z, Tensor::zeros({2, 6}), r), std::invalid_argument);
  s.shift = Tensor::zeros({4, 4});  // 4 does not divide 6 rows
  s.scale = Tensor::zeros({4, 4});
  EXPECT_THROW(siamese_input_forward(s, Tensor(), z, m, r), std::invalid_argument);
}

}  // namespace
}  // namespace vt
