// The gradient all-reduce overlapping the backward pass, as torch
// DistributedDataParallel's Reducer: the model announces gradient ranges as
// they become final (ParamStore::grads_final, from the backward passes of
// backbone/backbone.cpp, vision/vit.cpp, diffusion/dit_model.cpp), the ranges
// are packed into buckets of about `cap` elements (train/grad_buckets.h; the
// config key train.allreduce_bucket_mb, 25 MB as DDP's bucket_cap_mb), and
// each bucket's all-reduce is issued (GradientAllReduce::mean_range) as
// soon as its last range is final, while the backward pass goes on.
//
// The plan is learned, as DDP rebuilds its buckets after the first
// iteration: the first step records the order of the announcements and
// reduces the whole buffer after the backward pass; the buckets follow
// from that order and serve every later step. A model that announces
// nothing keeps the one reduction after the backward pass. At the end of a
// step, finish() issues any bucket whose ranges were not all announced (its
// gradients are final once the backward pass has returned) and orders the
// update after every bucket.
//
// Every rank announces the same ranges in the same order (same model, same
// code), so every rank issues the same collectives in the same order.
// Zeroing the gradients for the next step is ordered after finish() (stream
// order on a GPU), so it cannot race with a bucket still in flight.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "backbone/param_store.h"
#include "train/grad_allreduce.h"
#include "train/grad_buckets.h"

namespace vt {

class BucketedGradientAllReduce {
 public:
  // Installs the announcement hook on `params` (removed by the destructor);
  // `reduce` does the collectives. cap: bucket size in elements, >= 1.
  // Both must outlive this object. Throws std::invalid_argument for cap < 1.
  BucketedGradientAllReduce(ParamStore& params, GradientAllReduce& reduce, int64_t cap);
  ~BucketedGradientAllReduce();
  BucketedGradientAllReduce(const BucketedGradientAllReduce&) = delete;
  BucketedGradientAllReduce& operator=(const BucketedGradientAllReduce&) = delete;

  // Before the step's forward/backward: arms the hook (announcements outside
  // begin_step() .. finish() are ignored: evaluation, sampling).
  void begin_step();
  // After it: the rest of the buffer (all of it in the first step), then
  // GradientAllReduce::finish(). Throws std::logic_error when the first
  // step's announcements do not tile the buffer, or a later step announces
  // a range twice (a model bug: gradients written after their announcement).
  void finish();

  // The buckets (empty until the first step has finished, and for a model
  // that announces nothing), and the all-reduce calls of the last step
  // issued during its backward pass and in finish().
  const std::vector<GradRange>& buckets() const;
  int64_t issued_in_backward() const { return issued_in_backward_; }
  int64_t issued_in_finish() const { return issued_in_finish_; }

 private:
  void announced(int64_t offset, int64_t numel);
  void issue(size_t bucket);
  ParamStore& params_;
  GradientAllReduce& reduce_;
  int64_t cap_;
  bool armed_ = false, learned_ = false;
  std::vector<GradRange> first_step_;        // announcements of the first step
  std::unique_ptr<GradientBuckets> plan_;    // after the first step, if any
  int64_t issued_in_backward_ = 0, issued_in_finish_ = 0;
};

// Bucket size in elements of fp32 gradients for `mb` MiB (torch's
// bucket_cap_mb: mb * 2^20 bytes), at least 1; 0 for mb = 0 (one reduction
// after the backward pass). Throws std::invalid_argument for a negative or
// non-finite mb, naming train.allreduce_bucket_mb.
int64_t bucket_cap_elements(double mb);

}  // namespace vt
