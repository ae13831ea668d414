// The backbone under precision bf16 on emulated CUDA (backbone/workspace.h's
// activation dtype): a tiny DeiT (SiameseNorm; HybridNorm for its per-head
// q/k/v norms) and DiT (SiameseNorm, adaLN gates) run one training forward
// and backward on the CPU in fp32, on emulated CUDA in fp32 and with the
// bf16 weight copy. Checked:
//  - fp32 on CUDA equals the CPU within 1e-5 (the dtype plumbing leaves the
//    fp32 path alone);
//  - bf16 output, input gradient and parameter gradients stay within the
//    relative error bf16 activations allow (several roundings of 2^-8);
//  - every attention call of the bf16 step gets BF16 q/k/v and none F32
//    (kernels/attention.h's attention_calls), so a GPU build reaches cuDNN's
//    bf16 SDPA;
//  - on CUDA the Linears' bias, the MLP's GELU-tanh (DiT) and the bias
//    gradients ran as cuBLASLt epilogues (kernels/cuda/matmul_lt.h), none
//    fell back (every width here is a multiple of 8);
//  - the saved activations shrink by exactly what halving F's activations
//    gives, a closed form of the block layout (backbone/modules.h): per
//    block, z of both sublayers, qkv, the attention output and the MLP's two
//    hidden tensors (+ f of both sublayers for DiT) go from 4 to 2 bytes an
//    element; DiT's adaLN Linear keeps a bf16 copy of its F32 input SiLU(c).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "core/philox.h"
#include "kernels/attention.h"
#include "kernels/cuda/matmul_lt.h"

namespace vt {
namespace {

Tensor randn(const Shape& s, uint64_t stream, double std = 1.0) {
  Tensor t = Tensor::empty(s);
  Philox rng(11, stream);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(std * rng.normal());
  return t;
}

// ||a - b|| / ||b|| over all elements.
double rel_l2(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    num += d * d;
    den += static_cast<double>(b[i]) * b[i];
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

struct Step {
  std::vector<float> out, dh, dc, grads;
  int64_t saved = 0;
  AttentionCalls calls;  // during this step
  cuda::LtCounts lt;     // cuBLASLt epilogues during this step
};

enum class Mode { Cpu, CudaFp32, CudaBf16 };

Step run(const BackboneConfig& cfg, int64_t B, int64_t T, Mode mode) {
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  // Random weights of one scale instead of the initialisers: DiT's zero
  // adaLN would make every block the identity, and the tiny trunc_normal(.02)
  // Linears would hide the blocks behind the residual streams.
  {
    Philox rng(13, 0);
    float* w = store.weights().f32();
    for (int64_t i = 0; i < store.numel(); ++i) w[i] = static_cast<float>(0.3 * rng.normal());
  }
  const Device dev = mode == Mode::Cpu ? Device::cpu() : Device::cuda(0);
  if (mode != Mode::Cpu) store.to(dev);
  if (mode == Mode::CudaBf16) store.enable_bf16_copy();
  const int64_t D = cfg.dim;
  const Tensor h = randn({B, T, D}, 1).to(dev), dout = randn({B, T, D}, 2).to(dev);
  const Tensor c = cfg.conditioned() ? randn({B, D}, 3).to(dev) : Tensor();
  Tensor out = Tensor::empty({B, T, D}, DType::F32, dev), dh = Tensor::empty({B, T, D}, DType::F32, dev);
  Tensor dc = cfg.conditioned() ? Tensor::empty({B, D}, DType::F32, dev) : Tensor();
  const AttentionCalls before = attention_calls();
  const cuda::LtCounts lt0 = cuda::lt_counts();
  bb.forward(h, c, out, /*training=*/true, /*seed=*/3, /*step=*/1);
  bb.backward(dout, dh, dc);
  const AttentionCalls after = attention_calls();
  const cuda::LtCounts lt1 = cuda::lt_counts();
  Step s;
  s.lt = {lt1.fused - lt0.fused, lt1.fallback - lt0.fallback};
  s.calls.forward_f32 = after.forward_f32 - before.forward_f32;
  s.calls.forward_bf16 = after.forward_bf16 - before.forward_bf16;
  s.calls.backward_f32 = after.backward_f32 - before.backward_f32;
  s.calls.backward_bf16 = after.backward_bf16 - before.backward_bf16;
  s.out = out.to(Device::cpu()).to_vector();
  s.dh = dh.to(Device::cpu()).to_vector();
  if (dc.defined()) s.dc = dc.to(Device::cpu()).to_vector();
  s.grads = store.grads().to(Device::cpu()).to_vector();
  s.saved = bb.saved_activation_bytes();
  return s;
}

void check(const BackboneConfig& cfg, const std::string& what) {
  SCOPED_TRACE(what);
  const int64_t B = 2, T = 5, D = cfg.dim, Hd = cfg.hidden(), L = cfg.depth;
  const Step cpu = run(cfg, B, T, Mode::Cpu), f32 = run(cfg, B, T, Mode::CudaFp32), b16 = run(cfg, B, T, Mode::CudaBf16);

  EXPECT_LE(rel_l2(f32.out, cpu.out), 1e-5);
  EXPECT_LE(rel_l2(f32.dh, cpu.dh), 1e-5);
  EXPECT_LE(rel_l2(f32.grads, cpu.grads), 1e-5);
  // bf16: z, qkv, attention, GELU and their gradients each round to 8 bits
  // (relative 2^-9 per rounding), a few roundings deep.
  const double e_out = rel_l2(b16.out, cpu.out), e_dh = rel_l2(b16.dh, cpu.dh), e_g = rel_l2(b16.grads, cpu.grads);
  std::printf("[%s] bf16 vs cpu fp32: out %.2e, dh %.2e, param grads %.2e\n", what.c_str(), e_out, e_dh, e_g);
  EXPECT_LE(e_out, 1e-2);
  EXPECT_LE(e_dh, 3e-2);
  EXPECT_LE(e_g, 4e-2);
  EXPECT_GT(e_out, 0.0);  // bf16 really ran
  if (cfg.conditioned()) EXPECT_LE(rel_l2(b16.dc, cpu.dc), 5e-2);

  // Attention: once per block each way, with bf16 q/k/v under bf16.
  EXPECT_EQ(b16.calls.forward_bf16, L);
  EXPECT_EQ(b16.calls.backward_bf16, L);
  EXPECT_EQ(b16.calls.forward_f32, 0);
  EXPECT_EQ(b16.calls.backward_f32, 0);
  EXPECT_EQ(f32.calls.forward_f32, L);
  EXPECT_EQ(f32.calls.forward_bf16, 0);

  // Epilogues: per block and step at least the forward bias of qkv, proj,
  // fc1 and fc2 and the backward bias gradients of the same four.
  for (const Step* st : {&f32, &b16}) {
    EXPECT_GE(st->lt.fused, 8 * L);
    EXPECT_EQ(st->lt.fallback, 0);
  }
  EXPECT_EQ(cpu.lt.fused, 0);

  // Saved activations: the elements F keeps per block, at 2 bytes instead of 4.
  const bool hybrid = cfg.scheme == NormScheme::Hybrid;
  int64_t per_block = 2 * D + 3 * D + D + 2 * Hd;  // z x2, qkv, attention out, fc1 out, GELU out
  if (hybrid) per_block += 3 * D;                   // the raw projection before the q/k/v norms
  if (cfg.conditioned()) per_block += 2 * D;        // f x2 (read by the gates' backward)
  int64_t shrink = L * B * T * per_block * 2;
  if (cfg.conditioned()) shrink -= L * B * D * 2;   // adaLN's bf16 copy of SiLU(c)
  EXPECT_EQ(f32.saved - b16.saved, shrink);
  const double ratio = static_cast<double>(b16.saved) / static_cast<double>(f32.saved);
  std::printf("[%s] saved activation bytes: fp32 %lld, bf16 %lld, ratio %.3f\n", what.c_str(),
              static_cast<long long>(f32.saved), static_cast<long long>(b16.saved), ratio);
  EXPECT_LT(ratio, 0.85);
}

BackboneConfig tiny(ModelVariant v, NormScheme s) {
  BackboneConfig c;
  c.variant = v;
  c.scheme = s;
  c.dim = 16;
  c.depth = 2;
  c.heads = 2;
  c.gelu = v == ModelVariant::DiT ? Activation::GeluTanh : Activation::GeluErf;
  c.drop_path = {0.0f, 0.3f};
  return c;
}

TEST(BackboneBf16Emu, DeitSiamese) { check(tiny(ModelVariant::DeiT, NormScheme::Siamese), "deit siamese"); }
TEST(BackboneBf16Emu, DeitHybridQkvNorms) { check(tiny(ModelVariant::DeiT, NormScheme::Hybrid), "deit hybrid"); }
TEST(BackboneBf16Emu, DitSiamese) { check(tiny(ModelVariant::DiT, NormScheme::Siamese), "dit siamese"); }

}  // namespace
}  // namespace vt
