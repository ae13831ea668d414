// CUDA attention against the CPU kernels (kernels/cpu/attention.h) on the
// same packed qkv, fp32 and bf16 (bf16: both sides read the same rounded
// inputs; the device also rounds P, dS and the outputs to bf16).
// Three CUDA paths: the cuBLAS path with saved probabilities, the own flash
// kernel (saved logsumexp; runs on the emulator too) and cuDNN's fused SDPA
// (GPU builds with VT_CUDNN_SDPA only; skipped elsewhere).
#include <gtest/gtest.h>

#include <cmath>

#include "cuda_test_util.h"
#include "kernels/attention.h"
#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"
#if defined(VT_CUDNN_SDPA) && !defined(VT_CUDA_EMU)
#include "kernels/cuda/attention_cudnn.h"
#endif

namespace vt {
namespace {

using namespace cudatest;

void run_attention(int64_t B, int64_t T, int64_t H, int64_t Dh, DType io, uint64_t seed) {
  SCOPED_TRACE(std::string(dtype_name(io)) + " B=" + std::to_string(B) + " T=" + std::to_string(T) +
               " H=" + std::to_string(H) + " Dh=" + std::to_string(Dh));
  const int64_t D = H * Dh;
  const auto qkv = representable(randn(static_cast<size_t>(B * T * 3 * D), seed), io);
  const auto dout = representable(randn(static_cast<size_t>(B * T * D), seed + 1), io);
  std::vector<float> out(static_cast<size_t>(B * T * D)), probs(static_cast<size_t>(B * H * T * T)),
      dqkv(qkv.size());
  cpu::attention_forward(qkv.data(), out.data(), probs.data(), B, T, H, Dh);
  cpu::attention_backward(qkv.data(), probs.data(), dout.data(), dqkv.data(), B, T, H, Dh);

  Tensor gqkv = to_device(qkv, io), gdout = to_device(dout, io);
  Tensor gout = device_filled(out.size(), io, {}), gprobs = device_filled(probs.size(), io, {}),
         gdqkv = device_filled(dqkv.size(), io, qkv);
  cuda::attention_forward(gqkv.raw(), gout.raw(), gprobs.raw(), B, T, H, Dh, io);
  // bf16 probabilities and outputs carry roundings through a second GEMM.
  const double tol = io == DType::BF16 ? 2e-2 : 1e-5;
  expect_close(to_host(gprobs), probs, tol, "probs");
  expect_close(to_host(gout), out, tol, "out");
  Tensor gout2 = device_filled(out.size(), io, {});
  cuda::attention_forward(gqkv.raw(), gout2.raw(), nullptr, B, T, H, Dh, io);
  expect_close(to_host(gout2), out, tol, "out without saved probs");

  // Backward from the CPU's probabilities (as representable in io).
  Tensor sprobs = to_device(representable(probs, io), io);
  cuda::attention_backward(gqkv.raw(), sprobs.raw(), gdout.raw(), gdqkv.raw(), B, T, H, Dh, io);
  expect_close(to_host(gdqkv), dqkv, io == DType::BF16 ? 3e-2 : 2e-5, "dqkv");
}

TEST(CudaAttention, MatchesCpuFp32) {
  VT_SKIP_WITHOUT_GPU();
  run_attention(2, 17, 3, 16, DType::F32, 1);
  run_attention(3, 50, 1, 32, DType::F32, 2);  // one head: the non-batched GEMM path
}

TEST(CudaAttention, MatchesCpuBf16) {
  VT_SKIP_WITHOUT_GPU();
  run_attention(2, 17, 3, 16, DType::BF16, 3);
}

// Row logsumexp of the scaled scores in double, [B, H, T] (independent of
// both kernels: a direct sum over the keys).
std::vector<float> ref_lse(const std::vector<float>& qkv, int64_t B, int64_t T, int64_t H, int64_t Dh) {
  const int64_t D = H * Dh;
  const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
  std::vector<float> lse(static_cast<size_t>(B * H * T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i) {
        std::vector<double> s(static_cast<size_t>(T));
        double mx = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double a = 0.0;
          for (int64_t d = 0; d < Dh; ++d)
            a += static_cast<double>(qkv[static_cast<size_t>((b * T + i) * 3 * D + h * Dh + d)]) *
                 qkv[static_cast<size_t>((b * T + j) * 3 * D + D + h * Dh + d)];
          s[static_cast<size_t>(j)] = a * scale;
          mx = std::max(mx, a * scale);
        }
        double z = 0.0;
        for (double v : s) z += std::exp(v - mx);
        lse[static_cast<size_t>((b * H + h) * T + i)] = static_cast<float>(mx + std::log(z));
      }
  return lse;
}

struct CpuAttention {
  std::vector<float> qkv, dout, out, probs, dqkv, lse;
};

CpuAttention cpu_attention(int64_t B, int64_t T, int64_t H, int64_t Dh, DType io, uint64_t seed) {
  const int64_t D = H * Dh;
  CpuAttention c;
  c.qkv = representable(randn(static_cast<size_t>(B * T * 3 * D), seed), io);
  c.dout = representable(randn(static_cast<size_t>(B * T * D), seed + 1), io);
  c.out.resize(static_cast<size_t>(B * T * D));
  c.probs.resize(static_cast<size_t>(B * H * T * T));
  c.dqkv.resize(c.qkv.size());
  cpu::attention_forward(c.qkv.data(), c.out.data(), c.probs.data(), B, T, H, Dh);
  cpu::attention_backward(c.qkv.data(), c.probs.data(), c.dout.data(), c.dqkv.data(), B, T, H, Dh);
  c.lse = ref_lse(c.qkv, B, T, H, Dh);
  return c;
}

// Flash kernel vs the CPU twin. bf16 tolerances: out is rounded once to bf16
// (out_tol); the backward reads that rounded out for D = rowsum(dO * O), as
// FlashAttention-2 does, and rounds dqkv once: 1e-2 normwise (measured
// worst 2.5e-3 for out, 2.2e-3 for dqkv on the emulator; fp32 ~1e-6). lse
// is fp32 from the same inputs on both sides in either dtype.
void run_flash(int64_t B, int64_t T, int64_t H, int64_t Dh, DType io, uint64_t seed) {
  SCOPED_TRACE(std::string("flash ") + dtype_name(io) + " B=" + std::to_string(B) + " T=" + std::to_string(T) +
               " H=" + std::to_string(H) + " Dh=" + std::to_string(Dh));
  const CpuAttention c = cpu_attention(B, T, H, Dh, io, seed);
  Tensor gqkv = to_device(c.qkv, io), gdout = to_device(c.dout, io);
  Tensor gout = device_filled(c.out.size(), io, {}), glse = device_filled(c.lse.size(), DType::F32, {});
  cuda::flash_attention_forward(gqkv.raw(), gout.raw(), glse.f32(), B, T, H, Dh, io);
  expect_close(to_host(gout), c.out, out_tol(io), "out");
  expect_close(to_host(glse), c.lse, 1e-5, "lse");
  Tensor gout2 = device_filled(c.out.size(), io, {});
  cuda::flash_attention_forward(gqkv.raw(), gout2.raw(), nullptr, B, T, H, Dh, io);
  EXPECT_EQ(to_host(gout2), to_host(gout)) << "inference (no lse) must give the training forward's out";

  Tensor gdqkv = device_filled(c.dqkv.size(), io, c.qkv);  // pre-filled: the backward overwrites
  cuda::flash_attention_backward(gqkv.raw(), gout.raw(), glse.f32(), gdout.raw(), gdqkv.raw(), B, T, H, Dh, io);
  expect_close(to_host(gdqkv), c.dqkv, io == DType::BF16 ? 1e-2 : 2e-5, "dqkv");
}

// DeiT (T = 197 = 14^2 + cls) and DiT (T = 64, 256 latent patches) shapes at
// Dh = 64, with small B and H to keep the emulator fast; plus head dims that
// exercise the zero padding (24 -> 32, 72 -> 128 as in DiT-XL) and a T
// below one tile.
TEST(CudaAttention, FlashMatchesCpuFp32) {
  VT_SKIP_WITHOUT_GPU();
  run_flash(1, 197, 2, 64, DType::F32, 11);
  run_flash(2, 64, 2, 64, DType::F32, 12);
  run_flash(2, 5, 3, 24, DType::F32, 13);
  run_flash(1, 40, 1, 72, DType::F32, 14);
}

TEST(CudaAttention, FlashMatchesCpuBf16) {
  VT_SKIP_WITHOUT_GPU();
  run_flash(1, 197, 2, 64, DType::BF16, 15);
  run_flash(1, 256, 1, 64, DType::BF16, 16);
}

// The Tensor API: attention_saved_spec picks lse on CUDA, the forward and
// backward dispatch on the saved tensor's shape, and misuse is reported.
TEST(CudaAttention, TensorApiSavesLogsumexp) {
  VT_SKIP_WITHOUT_GPU();
  const int64_t B = 2, T = 33, H = 2, Dh = 24;
  const CpuAttention c = cpu_attention(B, T, H, Dh, DType::F32, 21);
  const AttentionSavedSpec spec = attention_saved_spec(Device::cuda(0), B, T, H, Dh);
  ASSERT_TRUE(spec.lse);
  EXPECT_EQ(spec.shape, (Shape{B, H, T}));
  EXPECT_FALSE(attention_saved_spec(Device::cpu(), B, T, H, Dh).lse);
  Tensor qkv = Tensor::from_vector(c.qkv, {B, T, 3 * H * Dh}).to(Device::cuda(0));
  Tensor dout = Tensor::from_vector(c.dout, {B, T, H * Dh}).to(Device::cuda(0));
  Tensor out = Tensor::empty({B, T, H * Dh}, DType::F32, Device::cuda(0));
  Tensor lse = Tensor::empty(spec.shape, spec.dtype, Device::cuda(0));
  Tensor dqkv = Tensor::empty(qkv.shape(), DType::F32, Device::cuda(0));
  attention_forward(qkv, H, out, lse);
  attention_backward(qkv, out, lse, dout, H, dqkv);
  expect_close(out.to_vector(), c.out, 1e-5, "out");
  expect_close(lse.to_vector(), c.lse, 1e-5, "lse");
  expect_close(dqkv.to_vector(), c.dqkv, 2e-5, "dqkv");
  try {
    attention_backward(qkv, lse, dout, H, dqkv);
    ADD_FAILURE() << "the probs-only backward accepted an lse";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("needs the forward's out"), std::string::npos) << e.what();
  }
  try {
    attention_forward(qkv.to(Device::cpu()), H, out.to(Device::cpu()), lse.to(Device::cpu()));
    ADD_FAILURE() << "the CPU accepted an lse";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA-only"), std::string::npos) << e.what();
  }
}

// cuDNN's fused SDPA (GPU builds with the cuDNN frontend) against the own
// flash kernel and the CPU twin, bf16, forward (out, lse) and backward, at a
// DeiT and a DiT shape. scripts/gpu_check.sh runs it (label cuda).
TEST(CudaAttention, CudnnSdpaMatchesFlashAndCpu) {
#if !defined(VT_CUDNN_SDPA) || defined(VT_CUDA_EMU)
  GTEST_SKIP() << "built without cuDNN SDPA (VT_CUDNN_SDPA)";
#else
  VT_SKIP_WITHOUT_GPU();
  struct Shape3 {
    int64_t B, T, H;
  };
  for (const Shape3 sh : {Shape3{4, 197, 6}, Shape3{4, 64, 16}}) {
    const int64_t B = sh.B, T = sh.T, H = sh.H, Dh = 64;
    SCOPED_TRACE("cudnn B=" + std::to_string(B) + " T=" + std::to_string(T) + " H=" + std::to_string(H));
    ASSERT_TRUE(cuda::cudnn_sdpa_supported(B, T, H, Dh));
    const DType io = DType::BF16;
    const CpuAttention c = cpu_attention(B, T, H, Dh, io, 31 + T);
    Tensor gqkv = to_device(c.qkv, io), gdout = to_device(c.dout, io);
    Tensor out_c = device_filled(c.out.size(), io, {}), lse_c = device_filled(c.lse.size(), DType::F32, {});
    Tensor out_f = device_filled(c.out.size(), io, {}), lse_f = device_filled(c.lse.size(), DType::F32, {});
    cuda::cudnn_sdpa_forward(gqkv.raw(), out_c.raw(), lse_c.f32(), B, T, H, Dh);
    cuda::flash_attention_forward(gqkv.raw(), out_f.raw(), lse_f.f32(), B, T, H, Dh, io);
    // cuDNN rounds P to bf16 before P V (tensor cores): two roundings.
    expect_close(to_host(out_c), c.out, 2e-2, "cudnn out vs cpu");
    expect_close(to_host(out_c), to_host(out_f), 2e-2, "cudnn out vs flash");
    expect_close(to_host(lse_c), c.lse, 1e-4, "cudnn lse vs cpu");
    Tensor dq_c = device_filled(c.dqkv.size(), io, c.qkv), dq_f = device_filled(c.dqkv.size(), io, {});
    cuda::cudnn_sdpa_backward(gqkv.raw(), out_c.raw(), lse_c.f32(), gdout.raw(), dq_c.raw(), B, T, H, Dh);
    cuda::flash_attention_backward(gqkv.raw(), out_f.raw(), lse_f.f32(), gdout.raw(), dq_f.raw(), B, T, H, Dh, io);
    expect_close(to_host(dq_c), c.dqkv, 4e-2, "cudnn dqkv vs cpu");
    expect_close(to_host(dq_c), to_host(dq_f), 4e-2, "cudnn dqkv vs flash");
  }
#endif
}

}  // namespace
}  // namespace vt
