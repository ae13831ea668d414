// A dataset whose samples say which they are, for tests of the loader and
// the batch upload: sample i is [C, H, W] floats i * 1000 + k (k the element
// index), label i % num_classes; load() of index `throw_at` throws
// std::runtime_error naming it. No files, no decoding: order and slot
// handling are what is tested.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>

#include "data_pipeline/dataset.h"

namespace vt_test {

class CountingDataset : public vt::Dataset {
 public:
  CountingDataset(int64_t n, vt::Shape chw, int num_classes = 3, int64_t throw_at = -1)
      : n_(n), chw_(std::move(chw)), classes_(num_classes), throw_at_(throw_at) {}
  int64_t size() const override { return n_; }
  vt::Shape sample_shape() const override { return chw_; }
  int32_t label(int64_t i) const override { return static_cast<int32_t>(i % classes_); }
  int num_classes() const override { return classes_; }
  std::string name(int64_t i) const override { return "sample " + std::to_string(i); }
  void load(int64_t i, vt::Philox&, float* out) const override {
    if (i == throw_at_) throw std::runtime_error("cannot read " + name(i));
    const int64_t per = vt::shape_numel(chw_);
    for (int64_t k = 0; k < per; ++k) out[k] = value(i, k);
  }
  static float value(int64_t i, int64_t k) { return static_cast<float>(i * 1000 + k); }

 private:
  int64_t n_;
  vt::Shape chw_;
  int classes_;
  int64_t throw_at_;
};

}  // namespace vt_test
