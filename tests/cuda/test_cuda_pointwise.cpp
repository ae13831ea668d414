// CUDA activations, elementwise helpers and optimizer kernels against
// closed forms in double (activations, elementwise) and the CPU kernels
// (AdamW, EMA: same fp32 update formula).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cuda_test_util.h"
#include "gradcheck.h"
#include "kernels/cpu/optim.h"
#include "kernels/cuda/activation.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/optim.h"

namespace vt {
namespace {

using namespace cudatest;

double act_ref(cuda::ActKind k, double x) {
  const double pi = 3.14159265358979323846;
  switch (k) {
    case cuda::ActKind::GeluErf:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case cuda::ActKind::GeluTanh:
      return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
    default:
      return x / (1.0 + std::exp(-x));
  }
}

TEST(CudaActivation, ForwardAndBackwardMatchClosedForm) {
  VT_SKIP_WITHOUT_GPU();
  const size_t n = 5000;
  for (DType io : {DType::F32, DType::BF16})
    for (auto k : {cuda::ActKind::GeluErf, cuda::ActKind::GeluTanh, cuda::ActKind::SiLU}) {
      SCOPED_TRACE(std::string(dtype_name(io)) + " kind " + std::to_string(static_cast<int>(k)));
      const auto x = representable(randn(n, 7, 3.0), io);
      const auto dy = representable(randn(n, 8), io);
      std::vector<float> y(n), dx(n);
      for (size_t i = 0; i < n; ++i) {
        y[i] = static_cast<float>(act_ref(k, x[i]));
        // Central difference of the double closed form.
        const auto ref = [&](const std::vector<double>& v) { return act_ref(k, v[0]); };
        dx[i] = static_cast<float>(dy[i] * gradcheck::central_differences({double(x[i])}, ref, 1e-4)[0]);
      }
      Tensor gx = to_device(x, io), gdy = to_device(dy, io);
      Tensor gy = device_filled(n, io, {}), gdx = device_filled(n, io, {});
      cuda::activation_forward(k, gx.raw(), gy.raw(), static_cast<int64_t>(n), io);
      cuda::activation_backward(k, gdy.raw(), gx.raw(), gdx.raw(), static_cast<int64_t>(n), io);
      expect_close(to_host(gy), y, out_tol(io), "y");
      expect_close(to_host(gdx), dx, io == DType::BF16 ? 1e-2 : 2e-5, "dx");
      // In place: y == x.
      cuda::activation_forward(k, gx.raw(), gx.raw(), static_cast<int64_t>(n), io);
      expect_close(to_host(gx), y, out_tol(io), "y in place");
    }
}

TEST(CudaElementwise, MatchesClosedForm) {
  VT_SKIP_WITHOUT_GPU();
  const size_t n = 3001;
  for (DType io : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(io));
    const auto a = representable(randn(n, 1), io), b = representable(randn(n, 2), io);
    std::vector<float> axpby(n), axpy(n), scaled(n), prod(n);
    double s = 0.0, ss = 0.0;
    for (size_t i = 0; i < n; ++i) {
      axpby[i] = static_cast<float>(0.5 * a[i] - 2.0 * b[i]);
      axpy[i] = static_cast<float>(b[i] + 3.0 * a[i]);
      scaled[i] = static_cast<float>(-1.5 * a[i]);
      prod[i] = static_cast<float>(static_cast<double>(a[i]) * b[i]);
      s += a[i];
      ss += static_cast<double>(a[i]) * a[i];
    }
    Tensor ga = to_device(a, io), gb = to_device(b, io), out = device_filled(n, io, {});
    const int64_t m = static_cast<int64_t>(n);
    cuda::axpby(0.5f, ga.raw(), -2.0f, gb.raw(), out.raw(), m, io);
    expect_close(to_host(out), axpby, out_tol(io), "axpby");
    cuda::scale(ga.raw(), -1.5f, out.raw(), m, io);
    expect_close(to_host(out), scaled, out_tol(io), "scale");
    cuda::mul(ga.raw(), gb.raw(), out.raw(), m, io);
    expect_close(to_host(out), prod, out_tol(io), "mul");
    EXPECT_NEAR(cuda::sum(ga.raw(), m, false, io), s, 1e-9 * n);
    EXPECT_NEAR(cuda::sum(ga.raw(), m, true, io), ss, 1e-9 * ss);
    cuda::axpy(3.0f, ga.raw(), gb.raw(), m, io);
    expect_close(to_host(gb), axpy, out_tol(io), "axpy");
  }
}

TEST(CudaElementwise, ClampMatchesClosedForm) {
  VT_SKIP_WITHOUT_GPU();
  const size_t n = 3001;
  for (DType io : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(io));
    auto a = representable(randn(n, 5, 20.0), io);
    a[7] = std::nanf("");
    std::vector<float> want(n);
    for (size_t i = 0; i < n; ++i) want[i] = std::isnan(a[i]) ? a[i] : std::min(std::max(a[i], -30.f), 20.f);
    Tensor ga = to_device(a, io), out = device_filled(n, io, {});
    cuda::clamp(ga.raw(), -30.f, 20.f, out.raw(), static_cast<int64_t>(n), io);
    const std::vector<float> got = to_host(out);
    EXPECT_TRUE(std::isnan(got[7])) << "NaN passes through, as torch.clamp";
    for (size_t i = 0; i < n; ++i) {
      if (i != 7) ASSERT_EQ(got[i], want[i]) << "at " << i;  // a clamp rounds nothing
    }
  }
}

TEST(CudaOptim, AdamWMatchesCpu) {
  VT_SKIP_WITHOUT_GPU();
  const size_t n = 10007;
  const auto p0 = randn(n, 1), g = randn(n, 2, 0.1), m0 = randn(n, 3, 0.01);
  auto v0 = randn(n, 4, 0.01);
  for (auto& v : v0) v = v * v;
  std::vector<uint8_t> mask(n);
  for (size_t i = 0; i < n; ++i) mask[i] = (i % 3) != 0;
  std::vector<float> p = p0, m = m0, v = v0;
  for (int64_t step = 1; step <= 3; ++step)
    cpu::adamw(p.data(), g.data(), m.data(), v.data(), static_cast<int64_t>(n), 1e-3, 0.9, 0.999, 1e-8, 0.05, step,
               mask.data());
  Tensor gp = to_device(p0, DType::F32), gg = to_device(g, DType::F32), gm = to_device(m0, DType::F32),
         gv = to_device(v0, DType::F32);
  Tensor gmask = Tensor::empty({static_cast<int64_t>(n)}, DType::U8);
  std::copy(mask.begin(), mask.end(), gmask.u8());
  gmask = gmask.to(Device::cuda(0));
  for (int64_t step = 1; step <= 3; ++step)
    cuda::adamw(gp.f32(), gg.f32(), gm.f32(), gv.f32(), static_cast<int64_t>(n), 1e-3, 0.9, 0.999, 1e-8, 0.05, step,
                gmask.u8());
  expect_close(to_host(gp), p, 1e-6, "param");
  expect_close(to_host(gm), m, 1e-6, "exp_avg");
  expect_close(to_host(gv), v, 1e-6, "exp_avg_sq");
  EXPECT_THROW(cuda::adamw(gp.f32(), gg.f32(), gm.f32(), gv.f32(), 1, 1e-3, 0.9, 0.999, 1e-8, 0.0, 0, nullptr),
               std::invalid_argument);
}

TEST(CudaOptim, EmaAndSumOfSquares) {
  VT_SKIP_WITHOUT_GPU();
  const size_t n = 70001;
  const auto e0 = randn(n, 5), p = randn(n, 6);
  std::vector<float> e = e0;
  cpu::ema_update(e.data(), p.data(), static_cast<int64_t>(n), 0.9999f);
  Tensor ge = to_device(e0, DType::F32), gp = to_device(p, DType::F32);
  cuda::ema_update(ge.f32(), gp.f32(), static_cast<int64_t>(n), 0.9999f);
  expect_close(to_host(ge), e, 1e-6, "ema");
  double ss = 0.0;
  for (float x : p) ss += static_cast<double>(x) * x;
  EXPECT_NEAR(cuda::sum_of_squares(gp.f32(), static_cast<int64_t>(n)), ss, 1e-10 * ss);
}

}  // namespace
}  // namespace vt
