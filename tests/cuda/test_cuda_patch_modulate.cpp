// Patch embedding layout ops, class token, position embedding and DiT's
// adaLN modulate/gate on CUDA against the CPU ops on the same inputs
// (F32: equal up to fp32 contraction; BF16 activations: one output rounding).
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/modulate.h"
#include "kernels/patch.h"

namespace vt {
namespace {

using namespace cudatest;

Tensor rnd(const Shape& s, uint64_t stream, DType dt = DType::F32) {
  return Tensor::from_vector(representable(randn(static_cast<size_t>(shape_numel(s)), stream), dt), s);
}
Tensor on_dev(const Tensor& t, DType dt) { return t.to(dt).to(Device::cuda(0)); }
Tensor dev_empty(const Shape& s, DType dt) { return Tensor::zeros(s, dt, Device::cuda(0)); }
void close(const Tensor& got, const Tensor& want, double tol, const char* what) {
  expect_close(got.to_vector(), want.to_vector(), tol, what);
}

TEST(CudaPatch, PermutationsAndTokenOpsMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 2, C = 3, H = 8, W = 12, p = 4, N = (H / p) * (W / p), F = C * p * p, D = 10;
  for (DType dt : {DType::F32, DType::BF16}) {
    Tensor img = rnd({B, C, H, W}, 1, dt), tok = rnd({B, N, F}, 2, dt);
    // The four layout maps are permutations: exact in both dtypes.
    Tensor pt = Tensor::empty({B, N, F}), gpt = dev_empty({B, N, F}, dt);
    patchify(img, p, pt);
    patchify(on_dev(img, dt), p, gpt);
    EXPECT_EQ(gpt.to_vector(), pt.to_vector()) << "patchify";
    Tensor im = Tensor::empty({B, C, H, W}), gim = dev_empty({B, C, H, W}, dt);
    patchify_backward(tok, p, im);
    patchify_backward(on_dev(tok, dt), p, gim);
    EXPECT_EQ(gim.to_vector(), im.to_vector()) << "patchify_backward";
    unpatchify(tok, p, im);
    unpatchify(on_dev(tok, dt), p, gim);
    EXPECT_EQ(gim.to_vector(), im.to_vector()) << "unpatchify";
    unpatchify_backward(img, p, pt);
    unpatchify_backward(on_dev(img, dt), p, gpt);
    EXPECT_EQ(gpt.to_vector(), pt.to_vector()) << "unpatchify_backward";

    Tensor x = rnd({B, N, D}, 3, dt), cls = rnd({1, 1, D}, 4), pos = rnd({1, N + 1, D}, 5);
    Tensor out = Tensor::empty({B, N + 1, D}), gout = dev_empty({B, N + 1, D}, dt);
    cls_concat(x, cls, out);
    cls_concat(on_dev(x, dt), cls.to(Device::cuda(0)), gout);
    close(gout, out, out_tol(dt), "cls_concat");
    Tensor sel = Tensor::empty({B, D}), gsel = dev_empty({B, D}, dt);
    cls_select(out, sel);
    cls_select(gout, gsel);
    {  // a copy: exactly the device's own row 0 of every sample
      const std::vector<float> all = gout.to(DType::F32).to_vector(), got = gsel.to(DType::F32).to_vector();
      for (int64_t b = 0; b < B; ++b)
        for (int64_t d = 0; d < D; ++d)
          ASSERT_EQ(got[b * D + d], all[b * (N + 1) * D + d]) << "cls_select " << b << "," << d;
    }
    close(gsel, sel, out_tol(dt), "cls_select");
    pos_embed_add(out, pos, out);  // in place, as the model does
    pos_embed_add(gout, pos.to(Device::cuda(0)), gout);
    close(gout, out, out_tol(dt), "pos_embed_add");

    Tensor dout = rnd({B, N + 1, D}, 6, dt);
    Tensor dx = Tensor::empty({B, N, D}), dcls = rnd({D}, 7), dpos = rnd({N + 1, D}, 8);
    Tensor gdx = dev_empty({B, N, D}, dt), gdcls = dcls.to(Device::cuda(0)), gdpos = dpos.to(Device::cuda(0));
    Tensor dsel = rnd({B, D}, 9, dt), dfull = Tensor::empty({B, N + 1, D}), gdfull = dev_empty({B, N + 1, D}, dt);
    gdfull.fill(3.0f);  // overwritten everywhere
    cls_select_backward(dsel, dfull);
    cls_select_backward(on_dev(dsel, dt), gdfull);
    close(gdfull, dfull, out_tol(dt), "cls_select_backward");
    cls_concat_backward(dout, dx, dcls);
    cls_concat_backward(on_dev(dout, dt), gdx, gdcls);
    EXPECT_EQ(gdx.to_vector(), dx.to_vector()) << "cls_concat_backward dx";
    close(gdcls, dcls, 1e-6, "dcls (accumulated)");
    pos_embed_add_backward(dout, dpos);
    pos_embed_add_backward(on_dev(dout, dt), gdpos);
    close(gdpos, dpos, 1e-6, "dpos (accumulated)");
  }
}

TEST(CudaModulate, ModulateAndGatesMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  // D = 24 takes 128-bit accesses in fp32 and bf16, 20 in fp32 only, 13 none.
  for (const int64_t D : {int64_t{20}, int64_t{24}, int64_t{13}})
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE("D=" + std::to_string(D) + " " + dtype_name(dt));
    const int64_t B = 3, T = 7;
    const Tensor ada = rnd({B, 6 * D}, 10);  // shift/scale/gate as column slices of the adaLN output
    const Tensor gada = ada.to(Device::cuda(0));
    auto cols = [&](const Tensor& t, int k) { return t.slice(1, k * D, (k + 1) * D); };
    const double tol = dt == DType::F32 ? 1e-6 : out_tol(dt);
    Tensor x = rnd({B, T, D}, 11, dt), dout = rnd({B, T, D}, 12, dt);
    Tensor out = Tensor::empty(x.shape()), gout = dev_empty(x.shape(), dt);
    modulate_forward(x, cols(ada, 0), cols(ada, 1), out);
    modulate_forward(on_dev(x, dt), cols(gada, 0), cols(gada, 1), gout);
    close(gout, out, tol, "modulate");
    Tensor g = Tensor::zeros({B, 6 * D}), gg = Tensor::zeros({B, 6 * D}, DType::F32, Device::cuda(0));
    Tensor dx = Tensor::empty(x.shape()), gdx = dev_empty(x.shape(), dt);
    modulate_backward(dout, x, cols(ada, 1), dx, cols(g, 0), cols(g, 1));
    modulate_backward(on_dev(dout, dt), on_dev(x, dt), cols(gada, 1), gdx, cols(gg, 0), cols(gg, 1));
    close(gdx, dx, tol, "modulate dx");
    close(gg, g, 1e-5, "dshift, dscale");
    gate_forward(x, cols(ada, 2), out);
    gate_forward(on_dev(x, dt), cols(gada, 2), gout);
    close(gout, out, tol, "gate");
    gate_backward(dout, x, cols(ada, 2), dx, cols(g, 2));
    gate_backward(on_dev(dout, dt), on_dev(x, dt), cols(gada, 2), gdx, cols(gg, 2));
    close(gdx, dx, tol, "gate dx");
    close(gg, g, 1e-5, "dgate");
    Tensor r = rnd({B, T, D}, 13), gr = r.to(Device::cuda(0));  // fp32 residual stream
    gate_residual_add(x, cols(ada, 3), 0.5f, r);
    gate_residual_add(on_dev(x, dt), cols(gada, 3), 0.5f, gr);
    close(gr, r, 1e-6, "gate_residual_add");
  }
}

}  // namespace
}  // namespace vt
