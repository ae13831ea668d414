// CUDA attention against the CPU kernels (kernels/cpu/attention.h) on the
// same packed qkv, fp32 and bf16 (bf16: both sides read the same rounded
// inputs; the device also rounds P, dS and the outputs to bf16).
#include <gtest/gtest.h>

#include "cuda_test_util.h"
#include "kernels/cpu/attention.h"
#include "kernels/cuda/attention.h"

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

}  // namespace
}  // namespace vt
