// The DiT model's gradient-ready announcements (ParamStore::grads_final),
// which the bucketed data-parallel all-reduce acts on during the backward
// pass: the ranges tile the flat gradient buffer exactly once and none is
// written after its announcement (tests/grad_final_check.h), for several
// norm schemes; the final layer's range comes first, the embedders' (and
// the frozen pos_embed's) last. The weights are drawn at random (DiT's
// zero-initialised adaLN and final layer would leave most gradients zero,
// which a late write could not change).
#include <gtest/gtest.h>

#include <string>

#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "grad_final_check.h"

namespace vt {
namespace {

TEST(DiTGradsFinal, EveryRangeFinalWhenAnnouncedAndTheRangesTileTheBuffer) {
  for (const char* name : {"pre", "siamese", "mixln", "residual", "hybrid"}) {
    DiTConfig c;
    c.input_size = 8, c.in_channels = 2, c.patch = 4, c.hidden = 16, c.depth = 3, c.heads = 2, c.num_classes = 3;
    c.scheme = norm_scheme_from_name(name);
    DiT model(c);
    ParamStore& ps = model.params();
    model.init_weights(4);
    Philox g(8, 1);
    float* w = ps.weights().f32();
    for (int64_t i = 0; i < ps.numel(); ++i) w[i] += static_cast<float>(0.1 * g.normal());
    model.set_pos_embed();
    const int64_t B = 3;
    Tensor x = Tensor::empty({B, 2, 8, 8}), dout = Tensor::empty({B, c.out_channels(), 8, 8});
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = static_cast<float>(g.normal());
    for (int64_t i = 0; i < dout.numel(); ++i) dout.f32()[i] = static_cast<float>(g.normal());
    Tensor t = Tensor::from_vector({5.0f, 400.0f, 999.0f}, {B}), y = Tensor::empty({B}, DType::I32);
    for (int64_t i = 0; i < B; ++i) y.i32()[i] = static_cast<int32_t>(i);  // class 3: the null label
    Tensor out = Tensor::empty(dout.shape());
    vt_test::GradFinalRecorder rec(ps);
    model.forward(x, t, y, out);
    ps.zero_grad();
    model.backward(dout);
    rec.expect_final_and_tiling(name);
    const auto& s = rec.seen();
    // final layer, the backbone's final norms (siamese only), 3 blocks, embedders
    ASSERT_EQ(s.size(), std::string(name) == "siamese" ? 6u : 5u) << name;
    EXPECT_EQ(s.front().offset, ps.info(ps.id("final_layer.adaLN_modulation.1.weight")).offset) << name;
    EXPECT_EQ(s.back().offset, 0) << name;
  }
}

}  // namespace
}  // namespace vt
