// The DeiT model's gradient-ready announcements (ParamStore::grads_final),
// which the bucketed data-parallel all-reduce acts on during the backward
// pass: for every norm scheme, and with blocks pruned (set_active_depth),
// the ranges tile the flat gradient buffer exactly once and none is written
// after its announcement (tests/grad_final_check.h); the head's range comes
// first, the embeddings' last, the blocks' in reverse order between.
#include <gtest/gtest.h>

#include <string>

#include "core/philox.h"
#include "grad_final_check.h"
#include "vision/vit.h"

namespace vt {
namespace {

Tensor normals(const Shape& s, uint64_t key) {
  Tensor t = Tensor::empty(s);
  Philox g(5, key);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(g.normal());
  return t;
}

TEST(VitGradsFinal, EveryRangeFinalWhenAnnouncedAndTheRangesTileTheBuffer) {
  for (const char* name : {"pre", "post", "siamese", "mixln", "deepnorm", "residual", "hybrid", "spannorm"}) {
    for (int64_t active : {int64_t(3), int64_t(1)}) {
      const std::string what = std::string(name) + ", " + std::to_string(active) + " of 3 blocks";
      VitConfig c;
      c.img_size = 16, c.patch_size = 8, c.in_chans = 3, c.num_classes = 5;
      c.backbone.scheme = norm_scheme_from_name(name);
      c.backbone.dim = 16, c.backbone.depth = 3, c.backbone.heads = 2;
      c.backbone.drop_path = drop_path_linspace(0.2f, 3);
      VisionTransformer m(c);
      m.init(3);
      m.backbone().set_active_depth(active);
      ParamStore& ps = m.params();
      const Tensor images = normals({4, 3, 16, 16}, 1), dlogits = normals({4, 5}, 2);
      Tensor logits = Tensor::empty({4, 5});
      vt_test::GradFinalRecorder rec(ps);
      for (int step = 0; step < 2; ++step) {  // the same ranges every step
        rec.clear();
        m.forward(images, logits, /*training=*/true, 9, static_cast<uint64_t>(step));
        ps.zero_grad();
        m.backward(dlogits);
        rec.expect_final_and_tiling(what);
        const auto& s = rec.seen();
        // head, the final norms with the pruned blocks (none for post/deepnorm
        // at full depth), the active blocks, embeddings
        ASSERT_GE(s.size(), static_cast<size_t>(active + 2)) << what;
        ASSERT_LE(s.size(), static_cast<size_t>(active + 3)) << what;
        EXPECT_EQ(s.front().offset, ps.info(ps.id("head.weight")).offset) << what;
        EXPECT_EQ(s.back().offset, 0) << what;
        for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i].offset, s[i - 1].offset) << what << ", range " << i;
      }
    }
  }
}

}  // namespace
}  // namespace vt
