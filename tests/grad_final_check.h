// Checks a model's gradient-ready announcements (ParamStore::grads_final),
// on which the bucketed all-reduce (train/grad_allreduce_bucketed.h) starts
// reducing a range while the backward pass goes on:
//  - the ranges announced in one backward pass tile [0, numel) exactly once;
//  - each range is final when announced: a copy taken at the announcement
//    equals, bitwise, the gradient once the whole backward pass has returned
//    (a kernel writing it later, e.g. a shared parameter's second use,
//    would make them differ).
// CPU stores only (the copies read host memory).
#pragma once
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backbone/param_store.h"

namespace vt_test {

class GradFinalRecorder {
 public:
  struct Announcement {
    int64_t offset, numel;
    std::vector<float> values;  // the gradient at the announcement
  };
  explicit GradFinalRecorder(vt::ParamStore& ps) : ps_(ps) {
    ps_.set_grads_final_hook([this](int64_t offset, int64_t numel) {
      const float* g = ps_.grads().f32() + offset;
      seen_.push_back({offset, numel, std::vector<float>(g, g + numel)});
    });
  }
  ~GradFinalRecorder() { ps_.set_grads_final_hook(nullptr); }
  void clear() { seen_.clear(); }
  const std::vector<Announcement>& seen() const { return seen_; }

  // The checks above on the current gradients (call after the backward pass).
  void expect_final_and_tiling(const std::string& what) const {
    const int64_t n = ps_.numel();
    std::vector<int> covered(static_cast<size_t>(n), 0);
    const float* g = ps_.grads().f32();
    for (const Announcement& a : seen_) {
      ASSERT_TRUE(a.offset >= 0 && a.numel >= 1 && a.offset + a.numel <= n)
          << what << ": range [" << a.offset << ", " << a.offset + a.numel << ") outside [0, " << n << ")";
      for (int64_t i = a.offset; i < a.offset + a.numel; ++i) ++covered[static_cast<size_t>(i)];
      EXPECT_EQ(std::memcmp(a.values.data(), g + a.offset, sizeof(float) * static_cast<size_t>(a.numel)), 0)
          << what << ": range [" << a.offset << ", " << a.offset + a.numel
          << ") changed after it was announced final (" << owner(a.offset, a.numel) << ")";
    }
    for (int64_t i = 0; i < n; ++i)
      if (covered[static_cast<size_t>(i)] != 1) {
        ADD_FAILURE() << what << ": gradient element " << i << " (" << owner(i, 1) << ") announced "
                      << covered[static_cast<size_t>(i)] << " times, not once";
        return;
      }
  }

 private:
  // The parameters a range touches, for messages.
  std::string owner(int64_t offset, int64_t numel) const {
    std::string s;
    for (const vt::ParamInfo& p : ps_.infos())
      if (p.offset < offset + numel && p.offset + p.numel > offset) s += (s.empty() ? "" : ", ") + p.name;
    return s.empty() ? "padding" : s;
  }
  vt::ParamStore& ps_;
  std::vector<Announcement> seen_;
};

}  // namespace vt_test
