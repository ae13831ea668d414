// Activation checkpointing (Backbone::set_activation_checkpointing) on
// emulated CUDA, fp32 and with the bf16 weight copy (bf16 activations): a
// tiny DeiT (SiameseNorm, drop-path drawn on the device) and DiT (SiameseNorm,
// adaLN), and in bf16 the other schemes' layouts, run two training steps
// with `none` and with `blocks`. Checked:
//  - output, input gradients and every parameter gradient bitwise equal
//    (the recompute runs the same device kernels on the same inputs, and
//    the drop-path kernel redraws the same masks);
//  - the recompute really ran on the device: attention forwards are L per
//    step without checkpointing and 2L - 1 with it (every block but the last
//    is recomputed), with bf16 q/k/v under bf16;
//  - fewer saved activation bytes.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "core/philox.h"
#include "kernels/attention.h"

namespace vt {
namespace {

Tensor randn(const Shape& s, uint64_t stream) {
  Tensor t = Tensor::empty(s);
  Philox rng(17, stream);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(rng.normal());
  return t;
}

struct Run {
  std::vector<std::vector<float>> values;  // per step: out, dh, dc, parameter gradients
  int64_t saved = 0;
  AttentionCalls calls;  // over both steps
};

Run run(const BackboneConfig& cfg, bool bf16, ActivationCheckpointing mode) {
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  {  // one scale for every parameter: DiT's zero adaLN would make the blocks the identity
    Philox rng(13, 0);
    float* w = store.weights().f32();
    for (int64_t i = 0; i < store.numel(); ++i) w[i] = static_cast<float>(0.3 * rng.normal());
  }
  const Device dev = Device::cuda(0);
  store.to(dev);
  if (bf16) store.enable_bf16_copy();
  bb.set_activation_checkpointing(mode);
  const int64_t B = 2, T = 5, D = cfg.dim;
  Run r;
  const AttentionCalls before = attention_calls();
  for (uint64_t step : {1u, 2u}) {
    const Tensor h = randn({B, T, D}, step).to(dev), dout = randn({B, T, D}, 10 + step).to(dev);
    const Tensor c = cfg.conditioned() ? randn({B, D}, 20 + step).to(dev) : Tensor();
    Tensor out = Tensor::empty({B, T, D}, DType::F32, dev), dh = Tensor::empty({B, T, D}, DType::F32, dev);
    Tensor dc = cfg.conditioned() ? Tensor::empty({B, D}, DType::F32, dev) : Tensor();
    store.zero_grad();
    bb.forward(h, c, out, /*training=*/true, /*seed=*/3, step);
    bb.backward(dout, dh, dc);
    r.values.push_back(out.to(Device::cpu()).to_vector());
    r.values.push_back(dh.to(Device::cpu()).to_vector());
    if (dc.defined()) r.values.push_back(dc.to(Device::cpu()).to_vector());
    r.values.push_back(store.grads().to(Device::cpu()).to_vector());
  }
  const AttentionCalls after = attention_calls();
  r.calls = {after.forward_f32 - before.forward_f32, after.forward_bf16 - before.forward_bf16,
             after.backward_f32 - before.backward_f32, after.backward_bf16 - before.backward_bf16,
             after.forward_cudnn - before.forward_cudnn};
  r.saved = bb.saved_activation_bytes();
  return r;
}

void check(const BackboneConfig& cfg, bool bf16, const std::string& what) {
  SCOPED_TRACE(what);
  const Run none = run(cfg, bf16, ActivationCheckpointing::None);
  const Run blocks = run(cfg, bf16, ActivationCheckpointing::Blocks);
  ASSERT_EQ(blocks.values.size(), none.values.size());
  for (size_t i = 0; i < none.values.size(); ++i) EXPECT_EQ(blocks.values[i], none.values[i]) << "tensor " << i;
  const int64_t L = cfg.depth, steps = 2;
  const int64_t fwd_none = bf16 ? none.calls.forward_bf16 : none.calls.forward_f32;
  const int64_t fwd_blocks = bf16 ? blocks.calls.forward_bf16 : blocks.calls.forward_f32;
  EXPECT_EQ(fwd_none, steps * L);
  EXPECT_EQ(fwd_blocks, steps * (2 * L - 1));
  EXPECT_EQ(bf16 ? blocks.calls.backward_bf16 : blocks.calls.backward_f32, steps * L);
  EXPECT_EQ(bf16 ? blocks.calls.forward_f32 : blocks.calls.forward_bf16, 0);
  EXPECT_LT(blocks.saved, none.saved);
  std::printf("[%s] saved activation bytes: none %lld, blocks %lld (%.3f)\n", what.c_str(),
              static_cast<long long>(none.saved), static_cast<long long>(blocks.saved),
              static_cast<double>(blocks.saved) / static_cast<double>(none.saved));
}

BackboneConfig tiny(ModelVariant v, NormScheme scheme = NormScheme::Siamese) {
  BackboneConfig c;
  c.variant = v;
  c.scheme = scheme;
  c.dim = 16;
  c.depth = 3;
  c.heads = 2;
  c.mixln_alpha = 0.34;  // Mix-LN: one Post block, then two Pre blocks
  c.gelu = v == ModelVariant::DiT ? Activation::GeluTanh : Activation::GeluErf;
  if (v == ModelVariant::DeiT) c.drop_path = {0.0f, 0.3f, 0.5f};
  return c;
}

TEST(BackboneCheckpointingEmu, DeitFp32) { check(tiny(ModelVariant::DeiT), false, "deit fp32"); }
TEST(BackboneCheckpointingEmu, DeitBf16) { check(tiny(ModelVariant::DeiT), true, "deit bf16"); }
TEST(BackboneCheckpointingEmu, DitFp32) { check(tiny(ModelVariant::DiT), false, "dit fp32"); }
TEST(BackboneCheckpointingEmu, DitBf16) { check(tiny(ModelVariant::DiT), true, "dit bf16"); }
// The schemes whose saved tensors differ from SiameseNorm's: HybridNorm's
// q/k/v norms, Mix-LN's Post and Pre blocks (a union of slots), SpanNorm's
// spanning residual, Post-Norm's and ResiDual's norms after the add.
TEST(BackboneCheckpointingEmu, OtherSchemesBf16) {
  check(tiny(ModelVariant::DeiT, NormScheme::Hybrid), true, "deit hybrid bf16");
  check(tiny(ModelVariant::DeiT, NormScheme::MixLN), true, "deit mixln bf16");
  check(tiny(ModelVariant::DeiT, NormScheme::SpanNorm), true, "deit spannorm bf16");
  check(tiny(ModelVariant::DiT, NormScheme::Post), true, "dit post bf16");
  check(tiny(ModelVariant::DiT, NormScheme::ResiDual), true, "dit residual bf16");
}

}  // namespace
}  // namespace vt
