// The diffusion ops (kernels/diffusion.h) on CUDA against their CPU twins:
// noise bit for bit (the same Philox draws, and the host's equal to
// vt::Philox's sequential normal()), the float64 element math within fp32
// output rounding, the per-sample loss sums within float64 reduction-order
// differences, and BF16 model outputs within one bf16 rounding of the
// gradient. The CPU twins themselves are checked against DiT's PyTorch
// implementation in tests/diffusion (test_gaussian_diffusion).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/philox.h"
#include "cuda_test_util.h"
#include "kernels/diffusion.h"

namespace vt {
namespace {

using namespace cudatest;

// A linear-beta schedule table of K steps (the formulas of
// diffusion/gaussian_diffusion.cpp; here it is only an input both twins share).
Tensor schedule_table(int K) {
  Tensor tab = Tensor::empty({K, kDiffusionCoefs}, DType::I64);
  double* r = f64_data(tab);
  double ac = 1.0;
  std::vector<double> post(static_cast<size_t>(K));
  for (int i = 0; i < K; ++i) {
    const double beta = 1e-4 * 1000.0 / K + (0.02 - 1e-4) * 1000.0 / K * i / std::max(1, K - 1);
    const double prev = ac;
    ac *= 1.0 - beta;
    double* c = r + i * kDiffusionCoefs;
    c[kDcAlphaBar] = ac;
    c[kDcAlphaBarPrev] = prev;
    c[kDcCoef1] = beta * std::sqrt(prev) / (1.0 - ac);
    c[kDcCoef2] = (1.0 - prev) * std::sqrt(1.0 - beta) / (1.0 - ac);
    c[kDcLogBeta] = std::log(beta);
    post[static_cast<size_t>(i)] = beta * (1.0 - prev) / (1.0 - ac);
  }
  for (int i = 0; i < K; ++i) r[i * kDiffusionCoefs + kDcPostLogVar] = std::log(post[static_cast<size_t>(i == 0 ? 1 : i)]);
  return tab;
}

Tensor t_of(const std::vector<int32_t>& v, Device d = Device::cpu()) {
  Tensor t = Tensor::empty({static_cast<int64_t>(v.size())}, DType::I32);
  for (size_t i = 0; i < v.size(); ++i) t.i32()[i] = v[i];
  return t.to(d);
}

Tensor host_tensor(const std::vector<float>& v, const Shape& s) { return Tensor::from_vector(v, s); }
Tensor dev(const Tensor& t, DType dt = DType::F32) { return t.to(dt).to(Device::cuda(0)); }

std::vector<double> f64_vector(const Tensor& t) {
  Tensor h = t.to(Device::cpu());
  const double* p = f64_data(h);
  return std::vector<double>(p, p + h.numel());
}

constexpr int64_t kB = 5, kC = 3, kH = 6, kW = 5, kN = kC * kH * kW;  // N = 90: < one 256-thread block
const Shape kImg{kB, kC, kH, kW}, kOut{kB, 2 * kC, kH, kW};
// Includes t = 0 (the t0 term, no DDPM/DDIM noise) and the last step.
const std::vector<int32_t> kT{0, 1, 17, 38, 39};
constexpr int kK = 40;

TEST(CudaDiffusion, NoiseIsPhiloxBitForBit) {
  VT_SKIP_WITHOUT_GPU();
  for (bool row_last : {true, false}) {
    NoiseRows rows;
    rows.purpose = 0xD1F70003, rows.key = 11, rows.row_last = row_last, rows.offset = 2, rows.stride = 3;
    const int64_t B = 4, N = 700;  // several 256-thread blocks per row
    Tensor host = Tensor::empty({B, N});
    gaussian_noise(77, rows, host);
    Tensor d = Tensor::full({B, N}, -9.0f, Device::cuda(0));
    gaussian_noise(77, rows, d);
    EXPECT_EQ(d.to_vector(), host.to_vector()) << "row_last " << row_last;
    // The host op is vt::Philox's sequential normal() per row (an independent path).
    for (int64_t r = 0; r < B; ++r) {
      const uint64_t g = static_cast<uint64_t>(2 + 3 * r);
      Philox rng(77, row_last ? philox_stream(0xD1F70003, 11, g) : philox_stream(0xD1F70003, g, 11));
      for (int64_t i = 0; i < N; ++i)
        ASSERT_EQ(host.f32()[r * N + i], static_cast<float>(rng.normal())) << "row " << r << " element " << i;
    }
  }
}

TEST(CudaDiffusion, QSampleMatchesCpu) {
  VT_SKIP_WITHOUT_GPU();
  const Tensor tab = schedule_table(kK), t = t_of(kT);
  const Tensor x0 = host_tensor(randn(kB * kN, 1), kImg), z = host_tensor(randn(kB * kN, 2), kImg);
  Tensor want = Tensor::empty(kImg);
  diffusion_q_sample(tab, t, x0, z, want);
  Tensor got = Tensor::zeros(kImg, DType::F32, Device::cuda(0));
  diffusion_q_sample(tab.to(Device::cuda(0)), t_of(kT, Device::cuda(0)), dev(x0), dev(z), got);
  expect_close(got.to_vector(), want.to_vector(), 1e-6, "q_sample");
}

TEST(CudaDiffusion, TrainingLossesMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  const Tensor tab = schedule_table(kK), t = t_of(kT), td = t_of(kT, Device::cuda(0));
  // x0 in [-1.2, 1.2]: both open edge bins of the t = 0 likelihood are hit.
  std::vector<float> x0v = randn(kB * kN, 3, 0.6);
  const Tensor z = host_tensor(randn(kB * kN, 4), kImg);
  const Tensor xt = host_tensor(randn(kB * kN, 5), kImg);
  std::vector<float> mov = randn(kB * 2 * kN, 6, 0.5);
  for (DType dt : {DType::F32, DType::BF16})
    for (DiffusionT0 t0 : {DiffusionT0::Nll, DiffusionT0::Kl, DiffusionT0::Zero}) {
      const std::string what = std::string(dtype_name(dt)) + " t0 " + std::to_string(static_cast<int>(t0));
      const Tensor x0 = host_tensor(x0v, kImg);
      const Tensor mo = host_tensor(representable(mov, dt), kOut);
      Tensor stats = Tensor::empty({kB, 2}, DType::I64), grad = Tensor::empty(kOut);
      diffusion_training_losses(tab, t, mo, x0, xt, z, t0, stats, grad);
      Tensor dstats = Tensor::zeros({kB, 2}, DType::I64, Device::cuda(0));
      Tensor dgrad = Tensor::zeros(kOut, dt, Device::cuda(0));
      diffusion_training_losses(tab.to(Device::cuda(0)), td, dev(mo, dt), dev(x0), dev(xt), dev(z), t0, dstats, dgrad);
      const std::vector<double> ws = f64_vector(stats), gs = f64_vector(dstats);
      for (size_t i = 0; i < ws.size(); ++i) {
        ASSERT_TRUE(std::isfinite(ws[i])) << what;
        EXPECT_NEAR(gs[i], ws[i], 1e-12 * std::max(1.0, std::fabs(ws[i]))) << what << " stat " << i;
      }
      expect_close(dgrad.to_vector(), grad.to_vector(), out_tol(dt), what + " grad");
      // The eps-channel gradient is -2 (noise - eps_hat) / (N B): a closed form.
      EXPECT_FLOAT_EQ(grad.f32()[3], static_cast<float>(-2.0 * (z.f32()[3] - mo.f32()[3]) / (kN * kB))) << what;
    }
}

// The step's loss/MSE/VB means stay on the device for the deferred read:
// both twins against the closed form summed on the host in row order.
TEST(CudaDiffusion, LossMeansMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 7;
  Tensor stats = Tensor::empty({B, 2}, DType::I64);
  double* st = f64_data(stats);
  const std::vector<float> r = randn(2 * B, 41, 3.0);
  double loss = 0, mse = 0, vb = 0;
  for (int64_t i = 0; i < 2 * B; ++i) st[i] = std::fabs(r[static_cast<size_t>(i)]) * (1.0 + 1e-9 * i);
  for (int64_t b = 0; b < B; ++b) loss += st[2 * b] + st[2 * b + 1], mse += st[2 * b], vb += st[2 * b + 1];
  const std::vector<float> want{static_cast<float>(loss / B), static_cast<float>(mse / B), static_cast<float>(vb / B)};
  Tensor out = Tensor::zeros({3}), gout = Tensor::zeros({3}, DType::F32, Device::cuda(0));
  diffusion_loss_means(stats, out);
  diffusion_loss_means(stats.to(Device::cuda(0)), gout);
  EXPECT_EQ(out.to_vector(), want);
  EXPECT_EQ(gout.to_vector(), want);
  EXPECT_THROW(diffusion_loss_means(Tensor::zeros({B, 3}, DType::I64), out), std::invalid_argument);
}

TEST(CudaDiffusion, PMeanVarianceAndStepsMatchCpu) {
  VT_SKIP_WITHOUT_GPU();
  const Tensor tab = schedule_table(kK), t = t_of(kT), td = t_of(kT, Device::cuda(0));
  const Tensor x = host_tensor(randn(kB * kN, 7), kImg), z = host_tensor(randn(kB * kN, 8), kImg);
  const std::vector<float> mov = randn(kB * 2 * kN, 9, 0.7);
  for (DType dt : {DType::F32, DType::BF16})
    for (bool clip : {false, true}) {
      const std::string what = std::string(dtype_name(dt)) + (clip ? " clip" : "");
      const Tensor mo = host_tensor(representable(mov, dt), kOut);
      Tensor m = Tensor::empty(kImg), lv = Tensor::empty(kImg), x0h = Tensor::empty(kImg);
      diffusion_p_mean_variance(tab, t, mo, x, clip, m, lv, x0h);
      Tensor dm = Tensor::zeros(kImg, DType::F32, Device::cuda(0)), dlv = Tensor::zeros(kImg, DType::F32, Device::cuda(0)),
             dx0 = Tensor::zeros(kImg, DType::F32, Device::cuda(0));
      diffusion_p_mean_variance(tab.to(Device::cuda(0)), td, dev(mo, dt), dev(x), clip, dm, dlv, dx0);
      expect_close(dm.to_vector(), m.to_vector(), 1e-6, what + " mean");
      expect_close(dlv.to_vector(), lv.to_vector(), 1e-6, what + " log_variance");
      expect_close(dx0.to_vector(), x0h.to_vector(), 1e-6, what + " x0_hat");

      Tensor o = Tensor::empty(kImg), dout = Tensor::zeros(kImg, DType::F32, Device::cuda(0));
      diffusion_ddpm_step(tab, t, mo, x, z, o, clip);
      diffusion_ddpm_step(tab.to(Device::cuda(0)), td, dev(mo, dt), dev(x), dev(z), dout, clip);
      expect_close(dout.to_vector(), o.to_vector(), 1e-6, what + " ddpm");
      for (double eta : {0.0, 0.5}) {
        const Tensor noise = eta == 0.0 ? Tensor() : z;
        diffusion_ddim_step(tab, t, mo, x, eta, noise, o, clip);
        diffusion_ddim_step(tab.to(Device::cuda(0)), td, dev(mo, dt), dev(x), eta, eta == 0.0 ? Tensor() : dev(z), dout, clip);
        expect_close(dout.to_vector(), o.to_vector(), 1e-6, what + " ddim eta " + std::to_string(eta));
      }
    }
}

TEST(CudaDiffusion, CfgCombineMatchesCpu) {
  VT_SKIP_WITHOUT_GPU();
  const std::vector<float> mov = randn(2 * kB * 2 * kC * 7, 10);
  for (DType dt : {DType::F32, DType::BF16})
    for (int g : {-1, 1}) {
      const Tensor mo = host_tensor(representable(mov, dt), {2 * kB, 2 * kC, 7});
      Tensor want = Tensor::empty({kB, 2 * kC, 7});
      diffusion_cfg_combine(mo, 4.0, g, want);
      Tensor got = Tensor::zeros({kB, 2 * kC, 7}, dt, Device::cuda(0));
      diffusion_cfg_combine(dev(mo, dt), 4.0, g, got);
      expect_close(got.to_vector(), want.to_vector(), out_tol(dt),
                   std::string(dtype_name(dt)) + " guided " + std::to_string(g));
    }
}

TEST(CudaDiffusion, BadStepIndexOnDeviceGivesNaN) {
  VT_SKIP_WITHOUT_GPU();
  const Tensor tab = schedule_table(kK).to(Device::cuda(0));
  const Tensor td = t_of({1, kK, 2, -1, 3}, Device::cuda(0));  // samples 1 and 3 are out of range
  const Tensor x0 = dev(host_tensor(randn(kB * kN, 11), kImg));
  Tensor out = Tensor::zeros(kImg, DType::F32, Device::cuda(0));
  diffusion_q_sample(tab, td, x0, x0, out);
  const std::vector<float> o = out.to_vector();
  for (int64_t b = 0; b < kB; ++b)
    EXPECT_EQ(std::isnan(o[static_cast<size_t>(b * kN)]), b == 1 || b == 3) << "sample " << b;
  // The CPU entry checks the indices instead.
  Tensor h = Tensor::empty(kImg);
  EXPECT_THROW(diffusion_q_sample(schedule_table(kK), t_of({1, kK, 2, 0, 3}), h, h, h), std::invalid_argument);
}

}  // namespace
}  // namespace vt
