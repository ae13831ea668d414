// The non-finite policy shared by vtrain and dittrain (train.max_nonfinite):
//   0 (default, as DeiT): stop at the first step whose loss or global
//     gradient norm is NaN/Inf;
//   N > 0: skip such a step (no optimizer or EMA update) up to N consecutive
//     times, then stop.
// Stopping throws NonFiniteLoss naming the step, the values and the last
// good checkpoint. The trainer records the step in metrics.jsonl first.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace vt {

class NonFiniteLoss : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class NonFiniteGuard {
 public:
  explicit NonFiniteGuard(int max_consecutive = 0) : max_(max_consecutive) {}

  // True when loss and grad_norm are finite (apply the update), false when
  // the step is to be skipped. Throws NonFiniteLoss when the policy says
  // stop; `where` adds context ("epoch 3, batch 17"), `last_checkpoint` is
  // named in the message ("none" when empty).
  bool check(int64_t step, double loss, double grad_norm, const std::string& where,
             const std::string& last_checkpoint);

  int max_consecutive() const { return max_; }
  int consecutive() const { return consecutive_; }  // non-finite steps in a row so far
  int64_t skipped_total() const { return total_; }  // skipped steps of the whole run
  void set_skipped_total(int64_t n) { total_ = n; }  // restored from a checkpoint

 private:
  int max_;
  int consecutive_ = 0;
  int64_t total_ = 0;
};

}  // namespace vt
