#include "train/loop.h"

#include "train/run_dir.h"

namespace vt {

int64_t TrainLoop::run(StepTask& task, int64_t first, int64_t end) {
  for (int64_t s = first + 1; s <= end; ++s) {
    if (!allreduce_made_) {
      allreduce_ = make_gradient_allreduce(params_.device());
      const int64_t cap = bucket_cap_elements(o_.allreduce_bucket_mb);
      if (allreduce_ && allreduce_->overlaps() && cap > 0)
        buckets_ = std::make_unique<BucketedGradientAllReduce>(params_, *allreduce_, cap);
      allreduce_made_ = true;
    }
    if (buckets_) buckets_->begin_step();
    StepTask::Output out = task.forward_backward(s);
    if (allreduce_) {
      if (buckets_) {
        buckets_->finish();
      } else {
        Tensor g = params_.grads();
        allreduce_->mean(g);
      }
      out.loss = mean_over_ranks(out.loss);
    }
    const UpdateResult u = apply_update(params_, opt_, guard_, run_, s, out.loss, out.lr, o_.update, out.where);
    task.after_update(s, out, u);
    if (o_.log_every_steps > 0 && (s % o_.log_every_steps == 0 || (o_.log_at_end && s == end)))
      run_.write_metrics(s, task.log_scalars(s), {{"split", "train"}}, "train");
    task.after_step(s);
    if (o_.ckpt_every_steps > 0 && s % o_.ckpt_every_steps == 0)
      task.save("every " + std::to_string(o_.ckpt_every_steps) + " steps");
    else if (o_.ckpt_at_end && s == end)
      task.save("end");
  }
  return end;
}

}  // namespace vt
