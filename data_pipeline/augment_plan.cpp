#include "data_pipeline/augment_plan.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace vt {

AugmentPlan plan_augment(int H, int W, Philox& rng, const AugmentSettings& s) {
  AugmentPlan p;
  // The order of process_image's DeitTrain draws before the split: flip,
  // RandAugment, erasing box, erasing values.
  if (s.hflip && rng.uniform_double() < 0.5) p.flip = 1;
  if (s.rand_augment) p.num_steps = randaug_plan(rng, s.randaug, p.steps);
  if (s.random_erasing) p.erase = random_erasing_box(H, W, rng, s.erasing);
  p.erase_normals = rng.position();
  return p;
}

void apply_augment_plan(const uint8_t* hwc, int H, int W, const AugmentPlan& plan, const AugmentSettings& s,
                        float* out) {
  // A header over the caller's bytes; the ops below write new images, the
  // flip a copy, so `hwc` is never modified.
  cv::Mat img(H, W, CV_8UC3, const_cast<uint8_t*>(hwc));
  if (plan.flip) {
    img = img.clone();
    hflip_inplace(img);
  }
  for (int i = 0; i < plan.num_steps; ++i)
    img = randaug_apply(img, plan.steps[i].op, plan.steps[i].level, plan.steps[i].sign, s.randaug);
  to_chw_normalized(img, s.mean, s.std, out);
  if (plan.erase.height > 0) {
    Philox normals = Philox::at(plan.erase_normals);
    random_erasing_fill(out, 3, H, W, plan.erase, normals);
  }
}

AugmentBatchArgs augment_batch_args(const std::vector<AugmentPlan>& plans, const AugmentSettings& s, int H, int W) {
  const size_t N = plans.size();
  int steps = 0;
  for (const AugmentPlan& p : plans) steps = std::max(steps, p.num_steps);
  AugmentBatchArgs a;
  a.steps.assign(static_cast<size_t>(steps) + 1, std::vector<AugmentStepArgs>(N));
  a.erase.resize(N);
  for (size_t n = 0; n < N; ++n) {
    const AugmentPlan& p = plans[n];
    if (p.flip) a.steps[0][n].kind = kAugFlip;
    for (int i = 0; i < p.num_steps; ++i)
      a.steps[static_cast<size_t>(i) + 1][n] = randaug_step_args(p.steps[i].op, p.steps[i].level, p.steps[i].sign, W, H, s.randaug);
    AugmentEraseArgs& e = a.erase[n];
    e.top = p.erase.top, e.left = p.erase.left, e.height = p.erase.height, e.width = p.erase.width;
    e.seed = p.erase_normals.seed, e.stream = p.erase_normals.stream, e.block = p.erase_normals.block;
    e.lane = p.erase_normals.lane;
  }
  a.mean.assign(s.mean.begin(), s.mean.end());
  a.std.assign(s.std.begin(), s.std.end());
  return a;
}

}  // namespace vt
