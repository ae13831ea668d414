#include "train/grad_allreduce_bucketed.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace vt {

BucketedGradientAllReduce::BucketedGradientAllReduce(ParamStore& params, GradientAllReduce& reduce, int64_t cap)
    : params_(params), reduce_(reduce), cap_(cap) {
  if (cap < 1) throw std::invalid_argument("BucketedGradientAllReduce: bucket cap " + std::to_string(cap) + " < 1");
  params_.set_grads_final_hook([this](int64_t offset, int64_t numel) { announced(offset, numel); });
}

BucketedGradientAllReduce::~BucketedGradientAllReduce() { params_.set_grads_final_hook(nullptr); }

const std::vector<GradRange>& BucketedGradientAllReduce::buckets() const {
  static const std::vector<GradRange> none;
  return plan_ ? plan_->buckets() : none;
}

void BucketedGradientAllReduce::begin_step() {
  armed_ = true;
  issued_in_backward_ = issued_in_finish_ = 0;
  if (plan_) plan_->reset();
  else if (!learned_) first_step_.clear();
}

void BucketedGradientAllReduce::announced(int64_t offset, int64_t numel) {
  if (!armed_) return;
  if (!learned_) {
    first_step_.push_back({offset, numel});
    return;
  }
  if (!plan_) return;
  for (size_t b : plan_->mark_final({offset, numel})) {
    issue(b);
    ++issued_in_backward_;
  }
}

void BucketedGradientAllReduce::issue(size_t bucket) {
  Tensor g = params_.grads();
  const GradRange& r = plan_->buckets()[bucket];
  reduce_.mean_range(g, r.offset, r.numel);
}

void BucketedGradientAllReduce::finish() {
  armed_ = false;
  if (!learned_) {
    learned_ = true;
    if (!first_step_.empty()) {
      const std::string err = tiling_error(params_.numel(), first_step_);
      if (!err.empty())
        throw std::logic_error("gradient all-reduce: the ranges the model announced final in its backward pass "
                               "do not tile its " + std::to_string(params_.numel()) + " gradients: " + err);
      plan_ = std::make_unique<GradientBuckets>(params_.numel(), first_step_, cap_);
    }
    Tensor g = params_.grads();
    reduce_.mean(g);
    issued_in_finish_ = 1;
    return;
  }
  if (plan_) {
    for (size_t b : plan_->pending()) {
      issue(b);
      ++issued_in_finish_;
    }
    reduce_.finish();
  } else {
    Tensor g = params_.grads();
    reduce_.mean(g);
    issued_in_finish_ = 1;
  }
}

int64_t bucket_cap_elements(double mb) {
  if (!std::isfinite(mb) || mb < 0)
    throw std::invalid_argument("train.allreduce_bucket_mb must be a finite number >= 0, got " + std::to_string(mb));
  if (mb == 0) return 0;
  const double elems = std::floor(mb * 1024.0 * 1024.0 / 4.0);
  if (elems >= 0x1p62) return int64_t(1) << 62;  // larger than any buffer
  return elems < 1 ? 1 : static_cast<int64_t>(elems);
}

}  // namespace vt
