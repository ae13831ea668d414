// BF16 through the public ops (kernels/*.h) on CUDA tensors, against the CPU
// ops in fp32 on the same bf16-representable inputs: the only expected
// difference is the bf16 rounding of the outputs (out_tol). And the dtype
// contract: BF16 on the CPU, or a dtype no kernel has, is an error naming
// the op and the dtype.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "cuda_test_util.h"
#include "kernels/activation.h"
#include "kernels/attention.h"
#include "kernels/elementwise.h"
#include "kernels/layernorm.h"
#include "kernels/matmul.h"
#include "kernels/siamese.h"

namespace vt {
namespace {

using namespace cudatest;

// A CPU F32 tensor holding bf16-representable normal values.
Tensor rnd16(const Shape& s, uint64_t stream, double std = 1.0, double mean = 0.0) {
  return Tensor::from_vector(representable(randn(static_cast<size_t>(shape_numel(s)), stream, std, mean), DType::BF16),
                             s);
}
Tensor dev16(const Tensor& t) { return t.to(DType::BF16).to(Device::cuda(0)); }
Tensor dev32(const Tensor& t) { return t.to(Device::cuda(0)); }
void close(const Tensor& got, const Tensor& want, DType dt, const char* what) {
  ASSERT_TRUE(got.device().is_cuda()) << what;
  ASSERT_EQ(got.dtype(), dt) << what;
  expect_close(got.to_vector(), want.to_vector(), out_tol(dt), what);
}

TEST(CudaBf16Dispatch, LayerNormWithFp32StatisticsAndParameters) {
  VT_SKIP_WITHOUT_GPU();
  Tensor x = rnd16({3, 5, 48}, 1, 2.0, 1.0), w = rnd16({48}, 2), b = rnd16({48}, 3), dy = rnd16({3, 5, 48}, 4);
  Tensor y = Tensor::empty(x.shape()), mean = Tensor::empty({15}), rstd = Tensor::empty({15});
  layernorm_forward(x, w, b, 1e-6f, y, mean, rstd);
  Tensor dx = Tensor::empty(x.shape()), dw = Tensor::zeros({48}), db = Tensor::zeros({48});
  layernorm_backward(dy, x, w, mean, rstd, dx, dw, db);

  Tensor gy = Tensor::empty(x.shape(), DType::BF16, Device::cuda(0));
  Tensor gmean = dev32(Tensor::zeros({15})), grstd = dev32(Tensor::zeros({15}));
  layernorm_forward(dev16(x), dev32(w), dev32(b), 1e-6f, gy, gmean, grstd);
  close(gy, y, DType::BF16, "y");
  close(gmean, mean, DType::F32, "mean");
  close(grstd, rstd, DType::F32, "rstd");
  Tensor gdx = Tensor::empty(x.shape(), DType::BF16, Device::cuda(0));
  Tensor gdw = dev32(Tensor::zeros({48})), gdb = dev32(Tensor::zeros({48}));
  layernorm_backward(dev16(dy), dev16(x), dev32(w), dev32(mean), dev32(rstd), gdx, gdw, gdb);
  close(gdx, dx, DType::BF16, "dx");
  close(gdw, dw, DType::F32, "dweight");
  close(gdb, db, DType::F32, "dbias");
}

TEST(CudaBf16Dispatch, LinearBf16WithFp32WeightGradient) {
  VT_SKIP_WITHOUT_GPU();
  Tensor x = rnd16({2, 7, 24}, 5), w = rnd16({16, 24}, 6, 0.2), b = rnd16({16}, 7), dy = rnd16({2, 7, 16}, 8);
  Tensor y = Tensor::empty({2, 7, 16}), dx = Tensor::empty(x.shape());
  Tensor dw = Tensor::zeros(w.shape()), db = Tensor::zeros({16});
  linear_forward(x, w, b, y);
  linear_backward(dy, x, w, dx, dw, db);
  Tensor gy = Tensor::empty(y.shape(), DType::BF16, Device::cuda(0));
  linear_forward(dev16(x), dev16(w), dev32(b), gy);
  close(gy, y, DType::BF16, "y");
  Tensor gdx = Tensor::empty(x.shape(), DType::BF16, Device::cuda(0));
  Tensor gdw = dev32(Tensor::zeros(w.shape())), gdb = dev32(Tensor::zeros({16}));
  linear_backward(dev16(dy), dev16(x), dev16(w), gdx, gdw, gdb);
  close(gdx, dx, DType::BF16, "dx");
  close(gdw, dw, DType::F32, "dweight (bf16 x bf16 -> fp32)");
  close(gdb, db, DType::F32, "dbias");
}

TEST(CudaBf16Dispatch, PointwiseActivationAndAttention) {
  VT_SKIP_WITHOUT_GPU();
  Tensor a = rnd16({4, 33}, 9), b = rnd16({4, 33}, 10);
  Tensor out = Tensor::empty(a.shape());
  axpby(0.5f, a, -2.0f, b, out);
  Tensor gout = Tensor::empty(a.shape(), DType::BF16, Device::cuda(0));
  axpby(0.5f, dev16(a), -2.0f, dev16(b), gout);
  close(gout, out, DType::BF16, "axpby");
  EXPECT_NEAR(sum(dev16(a)), sum(a), 1e-9 * 132 + 1e-6);  // exact inputs, double sums

  Tensor y = Tensor::empty(a.shape()), dx = Tensor::empty(a.shape());
  activation_forward(Activation::GeluTanh, a, y);
  activation_backward(Activation::GeluTanh, b, a, dx);
  Tensor gy = Tensor::empty(a.shape(), DType::BF16, Device::cuda(0)), gdx = gy.clone();
  activation_forward(Activation::GeluTanh, dev16(a), gy);
  activation_backward(Activation::GeluTanh, dev16(b), dev16(a), gdx);
  close(gy, y, DType::BF16, "gelu");
  close(gdx, dx, DType::BF16, "gelu backward");

  const int64_t B = 2, T = 5, H = 2, D = 16;
  Tensor qkv = rnd16({B, T, 3 * D}, 11), probs = Tensor::empty({B, H, T, T}), o = Tensor::empty({B, T, D});
  attention_forward(qkv, H, o, probs);
  Tensor gprobs = Tensor::empty(probs.shape(), DType::BF16, Device::cuda(0));
  Tensor go = Tensor::empty(o.shape(), DType::BF16, Device::cuda(0));
  const AttentionCalls before = attention_calls();
  attention_forward(dev16(qkv), H, go, gprobs);
  close(go, o, DType::BF16, "attention out");
  close(gprobs, probs, DType::BF16, "attention probs");
  // The call counter the training tests read saw exactly this bf16 call.
  const AttentionCalls after = attention_calls();
  EXPECT_EQ(after.forward_bf16 - before.forward_bf16, 1);
  EXPECT_EQ(after.forward_f32 - before.forward_f32, 0);
}

// bf16 training's SiameseNorm calls (backbone/block.h): fp32 streams, bf16 z
// written by the input kernel, a bf16 f added to the fp32 streams by the
// residual kernel, df written in bf16; against the CPU ops in fp32.
TEST(CudaBf16Dispatch, SiameseFp32StreamsBf16Activations) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 2, T = 3, D = 40, R = B * T;
  Tensor x = rnd16({B, T, D}, 20, 2.0, 1.0), y = rnd16({B, T, D}, 21, 3.0), f = rnd16({B, T, D}, 22);
  Tensor w = rnd16({D}, 23, 0.2, 1.0), b = rnd16({D}, 24, 0.1), gate = rnd16({B, D}, 25);
  Tensor dxo = rnd16({B, T, D}, 26), dyo = rnd16({B, T, D}, 27);
  SiameseInputSpec sp;
  sp.x = x, sp.y = y, sp.post = {true, w, b}, sp.pre = {true, w, b}, sp.input = {true, w, b};
  Tensor u = Tensor::empty(x.shape()), z = Tensor::empty(x.shape()), mean = Tensor::empty({3, R}),
         rstd = Tensor::empty({3, R});
  siamese_input_forward(sp, u, z, mean, rstd);
  SiameseResidualSpec rs;
  rs.u = u, rs.f = f, rs.y = y, rs.gate = gate, rs.inv_c = 0.5f;
  Tensor xo = Tensor::empty(x.shape()), yo = Tensor::empty(x.shape()), df = Tensor::empty(x.shape()),
         dgate = Tensor::empty({B, D});
  siamese_residual_backward(rs, dxo, dyo, df, dgate);
  siamese_residual_forward(rs, xo, yo);

  SiameseInputSpec gsp = sp;
  gsp.x = dev32(x), gsp.y = dev32(y);
  gsp.post = gsp.pre = gsp.input = {true, dev32(w), dev32(b)};
  Tensor gu = dev32(Tensor::zeros(x.shape())), gz = Tensor::empty(x.shape(), DType::BF16, Device::cuda(0));
  Tensor gmean = dev32(Tensor::zeros({3, R})), grstd = dev32(Tensor::zeros({3, R}));
  siamese_input_forward(gsp, gu, gz, gmean, grstd);
  close(gz, z, DType::BF16, "z");
  close(gu, u, DType::F32, "u");
  close(grstd, rstd, DType::F32, "rstd");
  SiameseResidualSpec grs = rs;
  grs.u = dev32(u), grs.f = dev16(f), grs.y = dev32(y), grs.gate = dev32(gate);
  Tensor gxo = dev32(Tensor::zeros(x.shape())), gyo = gxo.clone(), gdgate = dev32(Tensor::zeros({B, D}));
  Tensor gdf = Tensor::empty(x.shape(), DType::BF16, Device::cuda(0));
  siamese_residual_backward(grs, dev32(dxo), dev32(dyo), gdf, gdgate);
  siamese_residual_forward(grs, gxo, gyo);
  close(gxo, xo, DType::F32, "x_out");
  close(gyo, yo, DType::F32, "y_out");
  close(gdf, df, DType::BF16, "df");
  close(gdgate, dgate, DType::F32, "dgate");
  // df takes f's dtype; an F32 df for a bf16 f is an error naming df.
  try {
    siamese_residual_backward(grs, dev32(dxo), dev32(dyo), gxo, Tensor());
    ADD_FAILURE() << "F32 df for a BF16 f accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("df"), std::string::npos) << e.what();
  }
}

// The message of an op call that must fail.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CudaBf16Dispatch, UnsupportedDtypesNameTheOpAndDtype) {
  // CPU tensors only: runs with or without a GPU.
  Tensor x16 = Tensor::zeros({2, 8}).to(DType::BF16), y16 = x16.clone();
  std::string m = error_of([&] { activation_forward(Activation::SiLU, x16, y16); });
  EXPECT_NE(m.find("activation_forward"), std::string::npos) << m;
  EXPECT_NE(m.find("BF16"), std::string::npos) << m;
  EXPECT_NE(m.find("on the CPU"), std::string::npos) << m;
  Tensor xi = Tensor::zeros({2, 8}, DType::I32);
  m = error_of([&] { add(xi, xi, xi); });
  EXPECT_NE(m.find("add"), std::string::npos) << m;
  EXPECT_NE(m.find("I32"), std::string::npos) << m;
  // Mixed dtypes on CUDA are refused too.
  if (!cuda_available()) return;
  Tensor g32 = Tensor::zeros({2, 8}, DType::F32, Device::cuda(0)), g16 = dev16(Tensor::zeros({2, 8}));
  m = error_of([&] { add(g32, g16, g32); });
  EXPECT_NE(m.find("add"), std::string::npos) << m;
  EXPECT_NE(m.find("must have dtype F32"), std::string::npos) << m;
}

}  // namespace
}  // namespace vt
