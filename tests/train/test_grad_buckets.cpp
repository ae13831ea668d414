// Gradient buckets of the data-parallel all-reduce (train/grad_buckets.h)
// and the driver that issues them during the backward pass
// (train/grad_allreduce_bucketed.h), on the CPU without MPI: the packing
// rule on odd sizes and orders (expected buckets worked out by hand from
// the rule, plus random partitions checked against an element coverage
// count), readiness under any split of the announcements, the errors, and a
// real Backbone's backward driving a recording reducer: one whole-buffer
// reduction in the first step (learning the order), then several buckets
// per step, the first issued before the backward pass returns, tiling the
// buffer exactly once.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "backbone/backbone.h"
#include "core/philox.h"
#include "train/grad_allreduce_bucketed.h"
#include "train/grad_buckets.h"

namespace vt {
namespace {

using Ranges = std::vector<GradRange>;

std::string str(const Ranges& rs) {
  std::string s;
  for (const GradRange& r : rs) s += r.str() + " ";
  return s;
}

template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GradientBuckets, PacksAdjacentRangesInReadyOrderUntilTheCap) {
  // Ready from the end of the buffer down, as a backward pass over
  // parameters registered in forward order; odd sizes.
  const Ranges ready{{900, 103}, {650, 250}, {640, 10}, {300, 340}, {1, 299}, {0, 1}};
  // cap 300: [900,1003) 103 < 300 takes [650,900) -> 353, closed; [640,650)
  // 10 takes [300,640) -> 350, closed; [1,300) 299 takes [0,1) -> 300.
  EXPECT_EQ(str(GradientBuckets(1003, ready, 300).buckets()), "[650, 1003) [300, 650) [0, 300) ");
  // cap 1: every range alone; cap 0: one bucket; a huge cap: one bucket.
  EXPECT_EQ(GradientBuckets(1003, ready, 1).buckets(), ready);
  EXPECT_EQ(str(GradientBuckets(1003, ready, 0).buckets()), "[0, 1003) ");
  EXPECT_EQ(str(GradientBuckets(1003, ready, 1 << 30).buckets()), "[0, 1003) ");
  // A range that does not extend the open bucket contiguously closes it,
  // whatever the cap: [0,10) then [20,30) (a gap), then [10,20) joins [20,30)
  // below it.
  EXPECT_EQ(str(GradientBuckets(30, {{0, 10}, {20, 10}, {10, 10}}, 100).buckets()), "[0, 10) [10, 30) ");
  // Ascending order works the same way.
  EXPECT_EQ(str(GradientBuckets(7, {{0, 3}, {3, 1}, {4, 3}}, 4).buckets()), "[0, 4) [4, 7) ");
}

TEST(GradientBuckets, RefusesRangesThatDoNotTileTheBuffer) {
  auto err = [](int64_t total, const Ranges& r, int64_t cap = 8) {
    return error_of([&] { GradientBuckets b(total, r, cap); });
  };
  EXPECT_NE(err(10, {{0, 6}, {5, 5}}).find("[5, 10) overlaps [0, 6)"), std::string::npos) << err(10, {{0, 6}, {5, 5}});
  EXPECT_NE(err(10, {{0, 4}, {5, 5}}).find("[4, 5) is not covered"), std::string::npos);
  EXPECT_NE(err(10, {{0, 4}}).find("[4, 10) is not covered"), std::string::npos);
  EXPECT_NE(err(10, {{0, 11}}).find("ends past"), std::string::npos);
  EXPECT_NE(err(10, {{0, 10}, {3, 0}}).find("empty range [3, 3)"), std::string::npos);
  EXPECT_NE(err(10, {{-2, 12}}).find("starts before 0"), std::string::npos);
  EXPECT_NE(err(10, {{0, 10}}, -1).find("negative bucket cap -1"), std::string::npos);
  EXPECT_NE(err(0, {}).find("0 elements"), std::string::npos);
}

TEST(GradientBuckets, ABucketIsCompleteWhenEveryElementIsFinalInAnySplit) {
  GradientBuckets b(1003, {{900, 103}, {650, 250}, {640, 10}, {300, 340}, {1, 299}, {0, 1}}, 300);
  for (int round = 0; round < 2; ++round) {  // reset() starts the next step
    // Pieces of other sizes than the announced ranges, out of order.
    EXPECT_TRUE(b.mark_final({0, 150}).empty());
    EXPECT_TRUE(b.mark_final({700, 303}).empty());
    EXPECT_EQ(b.mark_final({150, 500}), std::vector<size_t>({1, 2}));  // [300,650) and [0,300) complete
    EXPECT_EQ(b.pending(), std::vector<size_t>({0}));
    EXPECT_THROW(b.mark_final({699, 2}), std::logic_error);  // overlaps [700, 1003)
    EXPECT_THROW(b.mark_final({10, 1}), std::logic_error);   // overlaps [0, 150)
    EXPECT_THROW(b.mark_final({1000, 10}), std::logic_error);  // past the end
    EXPECT_EQ(b.mark_final({650, 50}), std::vector<size_t>({0}));
    EXPECT_TRUE(b.pending().empty());
    b.reset();
    EXPECT_EQ(b.pending().size(), 3u);
  }
}

// Random partitions of odd totals, announced in a random mix of descending
// runs and jumps, random caps: checked against an element coverage count.
TEST(GradientBuckets, RandomPartitionsGiveContiguousBucketsThatTileOnceAndCompleteOnTheirLastElement) {
  Philox g(21, 0);
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t total = 1 + 2 * static_cast<int64_t>(g.integer(0, 400));
    std::vector<int64_t> cuts{0, total};
    for (int k = static_cast<int>(g.integer(0, 12)); k > 0; --k) cuts.push_back(g.integer(1, total));
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    Ranges ready;
    for (size_t i = 0; i + 1 < cuts.size(); ++i) ready.push_back({cuts[i], cuts[i + 1] - cuts[i]});
    std::reverse(ready.begin(), ready.end());
    for (size_t i = 0; i + 1 < ready.size(); ++i)
      if (g.bernoulli(0.3)) std::swap(ready[i], ready[static_cast<size_t>(g.integer(0, ready.size() - 1))]);
    const int64_t cap = g.integer(0, total + 5);
    const std::string what = "trial " + std::to_string(trial) + ": " + str(ready) + "cap " + std::to_string(cap);
    GradientBuckets b(total, ready, cap);
    std::vector<int> cover(static_cast<size_t>(total), 0);
    std::vector<size_t> bucket_of(static_cast<size_t>(total));
    for (size_t k = 0; k < b.buckets().size(); ++k)
      for (int64_t i = b.buckets()[k].offset; i < b.buckets()[k].end(); ++i)
        ++cover[static_cast<size_t>(i)], bucket_of[static_cast<size_t>(i)] = k;
    ASSERT_TRUE(std::all_of(cover.begin(), cover.end(), [](int c) { return c == 1; })) << what;
    if (cap == 0) {
      EXPECT_EQ(b.buckets().size(), 1u) << what;
    }
    // Each range lies in one bucket; the ranges of a bucket are consecutive
    // in the ready order; a range joins the open bucket exactly when the
    // bucket is below the cap and the range extends it contiguously.
    int64_t filled = 0, lo = 0, hi = 0;
    size_t last = 0;
    for (size_t i = 0; cap > 0 && i < ready.size(); ++i) {
      const GradRange& r = ready[i];
      const size_t k = bucket_of[static_cast<size_t>(r.offset)];
      EXPECT_EQ(bucket_of[static_cast<size_t>(r.end() - 1)], k) << what;
      const bool should_join = i > 0 && filled < cap && (r.end() == lo || r.offset == hi);
      if (i > 0) {
        EXPECT_EQ(k == last, should_join) << what << ", range " << r.str();
        EXPECT_TRUE(k == last || k == last + 1) << what << ": buckets out of ready order";
      }
      if (i > 0 && k == last) {
        filled += r.numel, lo = std::min(lo, r.offset), hi = std::max(hi, r.end());
      } else {
        filled = r.numel, lo = r.offset, hi = r.end();
      }
      last = k;
    }
    // Announce in pieces of random length in random order; a bucket must
    // complete exactly when its last element becomes final.
    std::vector<GradRange> pieces;
    for (int64_t at = 0; at < total;) {
      const int64_t n = std::min<int64_t>(total - at, g.integer(1, 40));
      pieces.push_back({at, n});
      at += n;
    }
    for (size_t i = pieces.size(); i > 1; --i) std::swap(pieces[i - 1], pieces[static_cast<size_t>(g.integer(0, i - 1))]);
    std::vector<int64_t> left(b.buckets().size());
    for (size_t k = 0; k < left.size(); ++k) left[k] = b.buckets()[k].numel;
    std::vector<int> completed(b.buckets().size(), 0);
    for (const GradRange& p : pieces) {
      std::vector<size_t> want;
      for (int64_t i = p.offset; i < p.end(); ++i)
        if (--left[bucket_of[static_cast<size_t>(i)]] == 0) want.push_back(bucket_of[static_cast<size_t>(i)]);
      std::sort(want.begin(), want.end());
      const std::vector<size_t> got = b.mark_final(p);
      EXPECT_EQ(got, want) << what << ", piece " << p.str();
      for (size_t k : got) ++completed[k];
    }
    EXPECT_TRUE(std::all_of(completed.begin(), completed.end(), [](int c) { return c == 1; })) << what;
  }
}

TEST(GradientBuckets, CapFromMegabytesAsTorch) {
  EXPECT_EQ(bucket_cap_elements(25), 25 * 1024 * 1024 / 4);  // DDP's default bucket_cap_mb
  EXPECT_EQ(bucket_cap_elements(0), 0);
  EXPECT_EQ(bucket_cap_elements(1e-9), 1);
  EXPECT_EQ(bucket_cap_elements(0.001), 262);  // 1048.576 bytes -> 262 floats
  EXPECT_NE(error_of([] { bucket_cap_elements(-1); }).find("train.allreduce_bucket_mb"), std::string::npos);
}

// A reducer that records what it is asked, and whether the backward pass
// was still running then (the test raises `in_backward` around it).
struct RecordingReduce : GradientAllReduce {
  struct Call {
    int64_t offset, numel;
    bool in_backward;
  };
  const bool* in_backward = nullptr;
  std::vector<Call> calls;
  int finishes = 0;
  void mean_range(Tensor& grads, int64_t offset, int64_t numel) override {
    check_grad_range("RecordingReduce", grads, offset, numel);
    calls.push_back({offset, numel, *in_backward});
  }
  void finish() override { ++finishes; }
  bool overlaps() const override { return true; }
};

// A model around a real Backbone: a parameter before it and one after it,
// announced as a model does (after / before the backbone's backward).
struct TinyModel {
  ParamStore ps;
  ParamId before = 0, after = 0;
  int64_t trunk_begin = 0, trunk_end = 0;
  std::unique_ptr<Backbone> bb;
  bool announce_outer = true;
  TinyModel() {
    before = ps.add("embed", {5, 7}, ParamInit::normal(0.5f), true);
    trunk_begin = ps.numel();
    BackboneConfig c;
    c.dim = 16, c.depth = 4, c.heads = 2;
    bb = std::make_unique<Backbone>(ps, c);
    trunk_end = ps.numel();
    after = ps.add("head", {3, 13}, ParamInit::normal(0.5f), true);
    ps.finalize();
    ps.init(2);
  }
  void step(bool& in_backward) {
    Tensor h = Tensor::empty({2, 5, 16}), out = Tensor::empty({2, 5, 16}), dh = Tensor::empty({2, 5, 16});
    Philox g(3, 0);
    for (int64_t i = 0; i < h.numel(); ++i) h.f32()[i] = static_cast<float>(g.normal());
    bb->forward(h, Tensor(), out, true, 1, 1);
    ps.zero_grad();
    in_backward = true;
    if (announce_outer) ps.grads_final(trunk_end, ps.numel() - trunk_end);
    bb->backward(out, dh, Tensor());
    if (announce_outer) ps.grads_final(0, trunk_begin);
    in_backward = false;
  }
};

std::vector<int> coverage(const std::vector<RecordingReduce::Call>& calls, int64_t n) {
  std::vector<int> c(static_cast<size_t>(n), 0);
  for (const auto& k : calls)
    for (int64_t i = k.offset; i < k.offset + k.numel; ++i) ++c[static_cast<size_t>(i)];
  return c;
}

TEST(BucketedGradientAllReduce, LearnsInTheFirstStepThenIssuesBucketsDuringTheBackwardPass) {
  TinyModel m;
  bool in_backward = false;
  RecordingReduce r;
  r.in_backward = &in_backward;
  const int64_t n = m.ps.numel();
  {
    BucketedGradientAllReduce br(m.ps, r, /*cap=*/1500);
    br.begin_step();
    m.step(in_backward);
    br.finish();
    ASSERT_EQ(r.calls.size(), 1u);  // the first step: the whole buffer, after the backward pass
    EXPECT_EQ(r.calls[0].offset, 0);
    EXPECT_EQ(r.calls[0].numel, n);
    EXPECT_FALSE(r.calls[0].in_backward);
    EXPECT_EQ(r.finishes, 1);
    ASSERT_GE(br.buckets().size(), 3u) << n << " gradients in buckets of 1500";
    for (int s = 2; s <= 3; ++s) {
      r.calls.clear();
      br.begin_step();
      m.step(in_backward);
      br.finish();
      EXPECT_EQ(r.finishes, s);
      ASSERT_EQ(r.calls.size(), br.buckets().size()) << "step " << s;
      EXPECT_EQ(br.issued_in_backward(), static_cast<int64_t>(r.calls.size()));
      EXPECT_EQ(br.issued_in_finish(), 0);
      for (const auto& k : r.calls) EXPECT_TRUE(k.in_backward) << "bucket [" << k.offset << ", +" << k.numel << ")";
      const std::vector<int> c = coverage(r.calls, n);
      EXPECT_TRUE(std::all_of(c.begin(), c.end(), [](int v) { return v == 1; })) << "step " << s;
      // The head's range first (announced before the backbone's backward),
      // the embedding's last.
      EXPECT_EQ(r.calls.front().offset + r.calls.front().numel, n);
      EXPECT_EQ(r.calls.back().offset, 0);
    }
    // Announcements outside a step (an evaluation's backward) are ignored.
    r.calls.clear();
    m.step(in_backward);
    EXPECT_TRUE(r.calls.empty());
  }
  // The hook left with the driver.
  m.step(in_backward);
  EXPECT_TRUE(r.calls.empty());
}

TEST(BucketedGradientAllReduce, UnannouncedBucketsAreReducedInFinish) {
  // Announcing only the backbone: the first step's ranges do not tile the
  // buffer, which names the gap.
  TinyModel m;
  m.announce_outer = false;
  bool in_backward = false;
  RecordingReduce r;
  r.in_backward = &in_backward;
  {
    BucketedGradientAllReduce br(m.ps, r, 1500);
    br.begin_step();
    m.step(in_backward);
    const std::string e = error_of([&] { br.finish(); });
    EXPECT_NE(e.find("do not tile"), std::string::npos) << e;
    EXPECT_NE(e.find("[0, " + std::to_string(m.trunk_begin) + ") is not covered"), std::string::npos) << e;
  }
  // Learned with every range, then a step that skips the outer ones: their
  // buckets go out in finish(), after the backward pass.
  m.announce_outer = true;
  BucketedGradientAllReduce br(m.ps, r, 1500);
  br.begin_step();
  m.step(in_backward);
  br.finish();
  m.announce_outer = false;
  r.calls.clear();
  br.begin_step();
  m.step(in_backward);
  br.finish();
  EXPECT_GE(br.issued_in_finish(), 2);
  EXPECT_GE(br.issued_in_backward(), 1);
  const std::vector<int> c = coverage(r.calls, m.ps.numel());
  EXPECT_TRUE(std::all_of(c.begin(), c.end(), [](int v) { return v == 1; }));
  EXPECT_FALSE(r.calls.back().in_backward);
}

// One 11-value parameter that no model announces, a recording reducer and
// buckets of 4 values (the two tests below).
struct SingleParam {
  ParamStore ps;
  bool in_backward = false;
  RecordingReduce r;
  std::unique_ptr<BucketedGradientAllReduce> br;
  SingleParam() {
    ps.add("w", {11}, ParamInit::zeros(), true);
    ps.finalize();
    r.in_backward = &in_backward;
    br = std::make_unique<BucketedGradientAllReduce>(ps, r, 4);
  }
};

TEST(BucketedGradientAllReduce, AModelThatAnnouncesNothingKeepsOneReductionAfterTheBackwardPass) {
  SingleParam f;
  RecordingReduce& r = f.r;
  BucketedGradientAllReduce& br = *f.br;
  for (int s = 0; s < 3; ++s) {
    br.begin_step();
    br.finish();
  }
  ASSERT_EQ(r.calls.size(), 3u);
  for (const auto& k : r.calls) EXPECT_EQ(k.numel, 11);
  EXPECT_TRUE(br.buckets().empty());
}

TEST(BucketedGradientAllReduce, ARangeAnnouncedTwiceIsAModelBug) {
  SingleParam f;
  ParamStore& ps = f.ps;
  BucketedGradientAllReduce& br = *f.br;
  br.begin_step();
  ps.grads_final(0, ps.numel());
  br.finish();
  br.begin_step();
  ps.grads_final(0, 11);
  const std::string e = error_of([&] { ps.grads_final(4, 2); });
  EXPECT_NE(e.find("announced final again"), std::string::npos) << e;
}

}  // namespace
}  // namespace vt
