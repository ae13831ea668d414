// The Tensor API (kernels/<family>.h) on CUDA tensors against the same call
// on CPU tensors: checks the device dispatch of every op with a CUDA twin,
// including the argument plumbing (strided adaLN slices, optional tensors).
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_test_util.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/optim.h"
#include "kernels/siamese.h"

namespace vt {
namespace {

using namespace cudatest;

Tensor rnd(const Shape& s, uint64_t stream, double std = 1.0, double mean = 0.0) {
  return Tensor::from_vector(randn(static_cast<size_t>(shape_numel(s)), stream, std, mean), s);
}
Tensor dev(const Tensor& t) { return t.defined() ? t.to(Device::cuda(0)) : Tensor(); }
void close(const Tensor& got, const Tensor& want, double tol, const char* what) {
  ASSERT_TRUE(got.device().is_cuda()) << what;
  expect_close(got.to_vector(), want.to_vector(), tol, what);
}

TEST(CudaDispatch, LayerNorm) {
  VT_SKIP_WITHOUT_GPU();
  Tensor x = rnd({3, 5, 48}, 1, 2.0, 1.0), w = rnd({48}, 2), b = rnd({48}, 3), dy = rnd({3, 5, 48}, 4);
  Tensor y = Tensor::empty(x.shape()), mean = Tensor::empty({15}), rstd = Tensor::empty({15});
  layernorm_forward(x, w, b, 1e-6f, y, mean, rstd);
  Tensor dx = rnd(x.shape(), 5), dw = rnd({48}, 6), db = rnd({48}, 7);
  Tensor gdx = dev(dx), gdw = dev(dw), gdb = dev(db);
  layernorm_backward_accumulate(dy, x, w, mean, rstd, dx, dw, db);
  Tensor gy = dev(Tensor::zeros(x.shape())), gmean = dev(mean), grstd = dev(rstd);
  layernorm_forward(dev(x), dev(w), dev(b), 1e-6f, gy, gmean, grstd);
  close(gy, y, 1e-5, "y");
  layernorm_backward_accumulate(dev(dy), dev(x), dev(w), dev(mean), dev(rstd), gdx, gdw, gdb);
  close(gdx, dx, 1e-5, "dx");
  close(gdw, dw, 1e-5, "dweight");
  close(gdb, db, 1e-5, "dbias");
}

TEST(CudaDispatch, SiameseDiT) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 2, T = 6, D = 40;
  Tensor ada = rnd({B, 6 * D}, 1, 0.3);  // adaLN output; shift/scale/gate are column slices
  auto make = [&](bool on_gpu) {
    auto m = [&](const Tensor& t) { return on_gpu ? dev(t) : t; };
    SiameseInputSpec s;
    s.x = m(rnd({B, T, D}, 2));
    s.y = m(rnd({B, T, D}, 3, 2.0));
    s.post = {true, m(rnd({D}, 4, 0.2, 1.0)), m(rnd({D}, 5))};
    s.pre = {true, m(rnd({D}, 6, 0.2, 1.0)), m(rnd({D}, 7))};
    s.input = {true, Tensor(), Tensor()};
    Tensor a = m(ada);
    s.shift = a.slice(1, 0, D);
    s.scale = a.slice(1, D, 2 * D);
    return s;
  };
  SiameseInputSpec c = make(false), g = make(true);
  Tensor u = Tensor::empty({B, T, D}), z = u.clone(), mean = Tensor::zeros({3, B * T}), rstd = mean.clone();
  siamese_input_forward(c, u, z, mean, rstd);
  Tensor gu = dev(u), gz = dev(z), gmean = dev(mean), grstd = dev(rstd);
  siamese_input_forward(g, gu, gz, gmean, grstd);
  close(gu, u, 1e-5, "u");
  close(gz, z, 1e-5, "z");
  close(gmean, mean, 1e-5, "mean");

  Tensor dmod = rnd({B, 6 * D}, 8), gdmod = dev(dmod);
  SiameseInputGrads cg;
  cg.dz = rnd({B, T, D}, 9), cg.du = rnd({B, T, D}, 10), cg.dy_pass = rnd({B, T, D}, 11);
  cg.dx = Tensor::empty({B, T, D}), cg.dy = Tensor::empty({B, T, D});
  cg.post_dw = rnd({D}, 12), cg.pre_db = rnd({D}, 13);
  cg.dshift = dmod.slice(1, 0, D), cg.dscale = dmod.slice(1, D, 2 * D);
  SiameseInputGrads gg;
  gg.dz = dev(cg.dz), gg.du = dev(cg.du), gg.dy_pass = dev(cg.dy_pass), gg.dx = dev(cg.dx), gg.dy = dev(cg.dy);
  gg.post_dw = dev(cg.post_dw), gg.pre_db = dev(cg.pre_db);
  gg.dshift = gdmod.slice(1, 0, D), gg.dscale = gdmod.slice(1, D, 2 * D);
  siamese_input_backward(c, mean, rstd, cg);
  siamese_input_backward(g, dev(mean), dev(rstd), gg);
  close(gg.dx, cg.dx, 1e-5, "dx");
  close(gg.dy, cg.dy, 1e-5, "dy");
  close(gg.post_dw, cg.post_dw, 1e-5, "post_dw");
  close(gg.pre_db, cg.pre_db, 1e-5, "pre_db");
  close(gdmod, dmod, 1e-5, "dshift/dscale");

  SiameseResidualSpec rc;
  rc.u = u, rc.f = rnd({B, T, D}, 14), rc.y = c.y, rc.gate = ada.slice(1, 2 * D, 3 * D);
  rc.drop_scale = Tensor::from_vector({1.25f, 0.0f}, {B}), rc.inv_c = 0.5f;
  SiameseResidualSpec rg;
  rg.u = dev(rc.u), rg.f = dev(rc.f), rg.y = dev(rc.y), rg.gate = dev(ada).slice(1, 2 * D, 3 * D);
  rg.drop_scale = dev(rc.drop_scale), rg.inv_c = 0.5f;
  Tensor xo = Tensor::empty({B, T, D}), yo = xo.clone(), gxo = dev(xo), gyo = dev(yo);
  siamese_residual_forward(rc, xo, yo);
  siamese_residual_forward(rg, gxo, gyo);
  close(gxo, xo, 1e-5, "x_out");
  close(gyo, yo, 1e-5, "y_out");
  Tensor dxo = rnd({B, T, D}, 15), dyo = rnd({B, T, D}, 16), df = Tensor::empty({B, T, D}), gdf = dev(df);
  Tensor dgate = rnd({B, 6 * D}, 17), gdgate = dev(dgate);
  siamese_residual_backward(rc, dxo, dyo, df, dgate.slice(1, 2 * D, 3 * D));
  siamese_residual_backward(rg, dev(dxo), dev(dyo), gdf, gdgate.slice(1, 2 * D, 3 * D));
  close(gdf, df, 1e-5, "df");
  close(gdgate, dgate, 1e-5, "dgate");
}

TEST(CudaDispatch, LinearAndMatmul) {
  VT_SKIP_WITHOUT_GPU();
  Tensor x = rnd({2, 7, 24}, 1), w = rnd({40, 24}, 2), b = rnd({40}, 3), dy = rnd({2, 7, 40}, 4);
  Tensor y = Tensor::empty({2, 7, 40}), gy = dev(y);
  linear_forward(x, w, b, y);
  linear_forward(dev(x), dev(w), dev(b), gy);
  close(gy, y, 1e-5, "y");
  Tensor dx = Tensor::empty(x.shape()), dw = rnd({40, 24}, 5), db = rnd({40}, 6);
  Tensor gdx = dev(dx), gdw = dev(dw), gdb = dev(db);
  linear_backward(dy, x, w, dx, dw, db);
  linear_backward(dev(dy), dev(x), dev(w), gdx, gdw, gdb);
  close(gdx, dx, 1e-5, "dx");
  close(gdw, dw, 1e-5, "dweight");
  close(gdb, db, 1e-5, "dbias");
  // A column slice of a wider tensor (row stride 3 * 16) as operand.
  Tensor qkv = rnd({9, 48}, 7), c = Tensor::empty({9, 9}), gc = dev(c);
  matmul(qkv.slice(1, 0, 16), false, qkv.slice(1, 16, 32), true, c, 0.25f);
  Tensor gqkv = dev(qkv);
  matmul(gqkv.slice(1, 0, 16), false, gqkv.slice(1, 16, 32), true, gc, 0.25f);
  close(gc, c, 1e-5, "q k^T");
}

TEST(CudaDispatch, PointwiseAndOptim) {
  VT_SKIP_WITHOUT_GPU();
  Tensor x = rnd({1000}, 1, 2.0), dy = rnd({1000}, 2), y = Tensor::empty({1000}), dx = y.clone();
  Tensor gy = dev(y), gdx = dev(dx);
  for (Activation a : {Activation::GeluErf, Activation::GeluTanh, Activation::SiLU}) {
    activation_forward(a, x, y);
    activation_backward(a, dy, x, dx);
    activation_forward(a, dev(x), gy);
    activation_backward(a, dev(dy), dev(x), gdx);
    close(gy, y, 1e-5, activation_name(a));
    close(gdx, dx, 2e-5, activation_name(a));
  }
  Tensor out = Tensor::empty({1000}), gout = dev(out);
  axpby(0.5f, x, -1.0f, dy, out);
  axpby(0.5f, dev(x), -1.0f, dev(dy), gout);
  close(gout, out, 1e-6, "axpby");
  EXPECT_NEAR(sum(dev(x)), sum(x), 1e-9 * 1000);

  const int64_t n = 5000;
  Tensor p = rnd({n}, 3), g = rnd({n}, 4, 0.1), m = Tensor::zeros({n}), v = Tensor::zeros({n});
  Tensor gp = dev(p), gg = dev(g), gm = dev(m), gv = dev(v);
  Tensor mask = decay_mask_from_segments(n, {{0, 1000, false}, {1000, n - 1000, true}});
  AdamWParams hp;
  hp.lr = 1e-2, hp.weight_decay = 0.05;
  adamw_step(p, g, m, v, hp, 1, mask);
  adamw_step(gp, gg, gm, gv, hp, 1, dev(mask));
  close(gp, p, 1e-6, "adamw param");
  close(gv, v, 1e-6, "adamw exp_avg_sq");
  Tensor e = rnd({n}, 5), ge = dev(e);
  ema_update(e, p, 0.99f);
  ema_update(ge, gp, 0.99f);
  close(ge, e, 1e-6, "ema");
  const double norm = clip_grad_norm(g, 0.5), gnorm = clip_grad_norm(gg, 0.5);
  EXPECT_NEAR(gnorm, norm, 1e-9 * norm);
  close(gg, g, 1e-6, "clipped grad");
}

TEST(CudaDispatch, Attention) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 2, T = 9, H = 2, D = 16;
  Tensor qkv = rnd({B, T, 3 * D}, 1), dout = rnd({B, T, D}, 2);
  Tensor out = Tensor::empty({B, T, D}), probs = Tensor::empty({B, H, T, T}), dqkv = Tensor::empty(qkv.shape());
  Tensor gout = dev(out), gprobs = dev(probs), gdqkv = dev(dqkv);
  attention_forward(qkv, H, out, probs);
  attention_backward(qkv, probs, dout, H, dqkv);
  attention_forward(dev(qkv), H, gout, gprobs);
  attention_backward(dev(qkv), gprobs, dev(dout), H, gdqkv);
  close(gout, out, 1e-5, "out");
  close(gprobs, probs, 1e-5, "probs");
  close(gdqkv, dqkv, 2e-5, "dqkv");
}

}  // namespace
}  // namespace vt
