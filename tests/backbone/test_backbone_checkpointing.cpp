// Activation checkpointing (Backbone::set_activation_checkpointing): with
// `blocks` each block's forward is recomputed before its backward from its
// kept input streams, on one set of saved tensors shared by all blocks.
// Checked for every norm scheme, DeiT (drop-path on, so the recomputed masks
// must be the forward's) and DiT (adaLN), and a pruned backbone:
//  - output, input gradients and every parameter gradient bitwise equal to
//    `none`, over two steps with different drop-path keys;
//  - the saved activation bytes drop by a closed form of the block layout
//    (backbone/block.h, backbone/modules.h): L - 1 blocks' saved tensors
//    (all but one set, the union of what the blocks save) and L - 1 stream
//    slots per stream (the L + 1 block boundaries and one mid-block slot
//    are kept instead of 2L + 1 sublayer boundaries).
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "backbone/backbone.h"
#include "core/philox.h"

namespace vt {
namespace {

struct CkCase {
  std::string name;
  ModelVariant variant;
  NormScheme scheme;
  bool normalized_input = true;
  int64_t active = 3;  // < depth: a pruned backbone
};
void PrintTo(const CkCase& c, std::ostream* os) { *os << c.name; }

constexpr int64_t kDepth = 3, kB = 2, kT = 3, kD = 8;

BackboneConfig config(const CkCase& k) {
  BackboneConfig c;
  c.variant = k.variant;
  c.scheme = k.scheme;
  c.normalized_input = k.normalized_input;
  c.dim = kD, c.depth = kDepth, c.heads = 2, c.mlp_ratio = 2.0;
  c.mixln_alpha = 0.34;  // Mix-LN: one Post block, then two Pre blocks
  const bool dit = k.variant == ModelVariant::DiT;
  c.gelu = dit ? Activation::GeluTanh : Activation::GeluErf;
  if (!dit) c.drop_path = {0.0f, 0.3f, 0.5f};  // block 0 saves no drop-path scales, the others do
  return c;
}

Tensor randn(const Shape& s, uint64_t stream) {
  Tensor t = Tensor::empty(s);
  Philox g(21, stream);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(g.normal());
  return t;
}

struct Result {
  std::vector<std::vector<float>> out, dh, dc, grads;  // per step
  int64_t saved = 0;
};

Result run(const CkCase& k, ActivationCheckpointing mode) {
  const BackboneConfig cfg = config(k);
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  Philox g(11, 1);
  float* w = store.weights().f32();
  for (const ParamInfo& p : store.infos()) {
    const bool nw = p.name.find("norm") != std::string::npos && p.name.find("weight") != std::string::npos;
    for (int64_t i = 0; i < p.numel; ++i)
      w[p.offset + i] = static_cast<float>(nw ? g.normal(1.0, 0.2) : g.normal(0.0, 0.4));
  }
  bb.set_activation_checkpointing(mode);
  EXPECT_EQ(bb.activation_checkpointing(), mode);
  bb.set_active_depth(k.active);
  const bool dit = cfg.conditioned();
  Result r;
  for (uint64_t step : {4u, 5u}) {
    const Tensor h = randn({kB, kT, kD}, step), R = randn({kB, kT, kD}, 10 + step);
    const Tensor c = dit ? randn({kB, kD}, 20 + step) : Tensor();
    Tensor out = Tensor::zeros({kB, kT, kD}), dh = Tensor::zeros({kB, kT, kD});
    Tensor dc = dit ? Tensor::zeros({kB, kD}) : Tensor();
    store.zero_grad();
    bb.forward(h, c, out, /*training=*/true, /*seed=*/3, step);
    bb.backward(R, dh, dc);
    r.out.push_back(out.to_vector());
    r.dh.push_back(dh.to_vector());
    r.dc.push_back(dit ? dc.to_vector() : std::vector<float>{});
    r.grads.push_back(store.grads().to_vector());
  }
  r.saved = bb.saved_activation_bytes();
  return r;
}

// Bytes block l keeps for its backward on the CPU in fp32: per sublayer z,
// the [3, R] mean and rstd, f (DiT: the gates read it), the pre-norm sum r
// and its statistics for a norm after the add, the drop-path scales [B];
// attention qkv, the [B,H,T,T] probabilities and its output (HybridNorm: the
// raw projection and the q/k/v norm statistics [3, R H] too); the MLP's two
// hidden tensors; DiT's adaLN output [B, 6D].
int64_t block_bytes(const BackboneConfig& cfg, bool after, bool drop) {
  const int64_t R = kB * kT, D = cfg.dim, H = cfg.heads;
  int64_t sub = R * D + 2 * 3 * R;
  if (cfg.conditioned()) sub += R * D;
  if (after) sub += R * D + 2 * R;
  if (drop) sub += kB;
  int64_t n = 2 * sub;
  n += 3 * R * D + kB * H * kT * kT + R * D;
  if (cfg.scheme == NormScheme::Hybrid) n += 3 * R * D + 2 * 3 * R * H;
  n += 2 * R * cfg.hidden();
  if (cfg.conditioned()) n += kB * 6 * D;
  return 4 * n;
}

bool has_after(NormScheme s) {
  return s == NormScheme::Post || s == NormScheme::DeepNorm || s == NormScheme::SpanNorm || s == NormScheme::ResiDual;
}

int64_t streams(NormScheme s) {
  return s == NormScheme::Siamese || s == NormScheme::ResiDual || s == NormScheme::SpanNorm ? 2 : 1;
}

class BackboneCheckpointing : public ::testing::TestWithParam<CkCase> {};

TEST_P(BackboneCheckpointing, BitwiseEqualToNoneWithTheClosedFormMemory) {
  const CkCase k = GetParam();
  const Result none = run(k, ActivationCheckpointing::None), blocks = run(k, ActivationCheckpointing::Blocks);
  for (size_t s = 0; s < none.out.size(); ++s) {
    SCOPED_TRACE("step " + std::to_string(s));
    EXPECT_EQ(blocks.out[s], none.out[s]);
    EXPECT_EQ(blocks.dh[s], none.dh[s]);
    EXPECT_EQ(blocks.dc[s], none.dc[s]);
    ASSERT_EQ(blocks.grads[s].size(), none.grads[s].size());
    size_t differ = 0;
    for (size_t i = 0; i < none.grads[s].size(); ++i) differ += blocks.grads[s][i] != none.grads[s][i];
    EXPECT_EQ(differ, 0u) << "parameter gradients differ";
  }
  EXPECT_NE(none.out[0], none.out[1]);  // the second step is another step

  const BackboneConfig cfg = config(k);
  int64_t all = 0;
  bool any_after = false, any_drop = false;
  for (int64_t l = 0; l < kDepth; ++l) {  // every block is planned, active or not
    const bool after = has_after(cfg.block_scheme(l));
    const bool drop = !cfg.drop_path.empty() && cfg.drop_path[static_cast<size_t>(l)] > 0.0f;
    all += block_bytes(cfg, after, drop);
    any_after = any_after || after, any_drop = any_drop || drop;
  }
  const int64_t slot = kB * kT * kD * 4;
  const int64_t drop_bytes = all - block_bytes(cfg, any_after, any_drop) + (kDepth - 1) * streams(k.scheme) * slot;
  EXPECT_EQ(none.saved - blocks.saved, drop_bytes) << "none " << none.saved << ", blocks " << blocks.saved;
}

INSTANTIATE_TEST_SUITE_P(
    All, BackboneCheckpointing,
    ::testing::Values(CkCase{"deit_siamese", ModelVariant::DeiT, NormScheme::Siamese},
                      CkCase{"deit_siamese_noinput", ModelVariant::DeiT, NormScheme::Siamese, false},
                      CkCase{"deit_pre", ModelVariant::DeiT, NormScheme::Pre},
                      CkCase{"deit_post", ModelVariant::DeiT, NormScheme::Post},
                      CkCase{"deit_mixln", ModelVariant::DeiT, NormScheme::MixLN},
                      CkCase{"deit_deepnorm", ModelVariant::DeiT, NormScheme::DeepNorm},
                      CkCase{"deit_residual", ModelVariant::DeiT, NormScheme::ResiDual},
                      CkCase{"deit_hybrid", ModelVariant::DeiT, NormScheme::Hybrid},
                      CkCase{"deit_spannorm", ModelVariant::DeiT, NormScheme::SpanNorm},
                      CkCase{"deit_siamese_pruned", ModelVariant::DeiT, NormScheme::Siamese, true, 2},
                      CkCase{"dit_siamese", ModelVariant::DiT, NormScheme::Siamese},
                      CkCase{"dit_siamese_noinput", ModelVariant::DiT, NormScheme::Siamese, false},
                      CkCase{"dit_pre", ModelVariant::DiT, NormScheme::Pre},
                      CkCase{"dit_post", ModelVariant::DiT, NormScheme::Post},
                      CkCase{"dit_mixln", ModelVariant::DiT, NormScheme::MixLN},
                      CkCase{"dit_deepnorm", ModelVariant::DiT, NormScheme::DeepNorm},
                      CkCase{"dit_residual", ModelVariant::DiT, NormScheme::ResiDual},
                      CkCase{"dit_hybrid", ModelVariant::DiT, NormScheme::Hybrid},
                      CkCase{"dit_spannorm", ModelVariant::DiT, NormScheme::SpanNorm},
                      CkCase{"dit_spannorm_pruned", ModelVariant::DiT, NormScheme::SpanNorm, true, 1}),
    [](const ::testing::TestParamInfo<CkCase>& i) { return i.param.name; });

// One backbone switched between the modes (the workspaces are replanned,
// none -> blocks -> none) gives the same step each time, and a backward
// after a switch without a new forward is refused.
TEST(BackboneCheckpointingModes, SwitchingReplansAndKeepsTheResults) {
  const BackboneConfig cfg = config({"", ModelVariant::DeiT, NormScheme::Siamese});
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  store.init(2);
  const Tensor h = randn({kB, kT, kD}, 1), R = randn({kB, kT, kD}, 2);
  auto step = [&](ActivationCheckpointing m) {
    bb.set_activation_checkpointing(m);
    Tensor out = Tensor::zeros(h.shape()), dh = Tensor::zeros(h.shape());
    store.zero_grad();
    bb.forward(h, Tensor(), out, true, 7, 3);
    bb.backward(R, dh, Tensor());
    std::vector<float> r = dh.to_vector();
    for (float v : store.grads().to_vector()) r.push_back(v);
    return std::make_pair(r, bb.saved_activation_bytes());
  };
  const auto a = step(ActivationCheckpointing::None), b = step(ActivationCheckpointing::Blocks),
             c = step(ActivationCheckpointing::None);
  EXPECT_EQ(b.first, a.first);
  EXPECT_EQ(c.first, a.first);
  EXPECT_LT(b.second, a.second);
  EXPECT_EQ(c.second, a.second);
  bb.set_activation_checkpointing(ActivationCheckpointing::Blocks);
  Tensor dh = Tensor::zeros(h.shape());
  EXPECT_THROW(bb.backward(R, dh, Tensor()), std::logic_error);

  EXPECT_EQ(activation_checkpointing_from_name("blocks"), ActivationCheckpointing::Blocks);
  EXPECT_STREQ(activation_checkpointing_name(ActivationCheckpointing::None), "none");
  try {
    activation_checkpointing_from_name("block");
    ADD_FAILURE() << "'block' accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'block'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace vt
