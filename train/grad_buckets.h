// Gradient buckets: which contiguous ranges of the flat gradient buffer
// (ParamStore::grads()) are all-reduced together, and when each is ready.
// The planning half of torch DistributedDataParallel's Reducer
// (torch/csrc/distributed/c10d/reducer.cpp, compute_bucket_assignment_by_size
// and mark_variable_ready), over element ranges instead of tensors:
//
// - The plan: the ranges a backward pass announces (ParamStore::grads_final),
//   in the order it announced them, are packed greedily into buckets: a
//   range joins the open bucket while the bucket's size is below the cap and
//   the range extends it contiguously (below or above); otherwise it opens
//   the next bucket. As in DDP a bucket closes once it reaches the cap (so
//   it may exceed it by its last range), and a range larger than the cap is
//   a bucket on its own; ranges are never split. Every bucket is one
//   contiguous range, and the buckets tile the buffer exactly once.
// - Per step: mark_final(range) records a range as final; a bucket is
//   complete (ready to reduce) when every element of it is final, whatever
//   the order or the split of the announcements.
//
// Sizes are in elements (fp32: 4 bytes each). Pure bookkeeping: no tensors,
// no MPI, no CUDA.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vt {

struct GradRange {
  int64_t offset = 0;  // first element
  int64_t numel = 0;
  int64_t end() const { return offset + numel; }
  bool operator==(const GradRange& o) const { return offset == o.offset && numel == o.numel; }
  std::string str() const;  // "[offset, end)"
};

class GradientBuckets {
 public:
  // total: the buffer's elements (>= 1); ready: the announced ranges in
  // announcement order; cap: the bucket size in elements (>= 1), or 0 for
  // one bucket [0, total). Throws std::invalid_argument when the ranges do
  // not tile [0, total) exactly once (naming the first range that overlaps
  // another or leaves the buffer, or the first gap), for an empty range, or
  // for a negative cap.
  GradientBuckets(int64_t total, const std::vector<GradRange>& ready, int64_t cap);

  int64_t total() const { return total_; }
  // In the order they become ready (the order of their first range).
  const std::vector<GradRange>& buckets() const { return buckets_; }

  // Starts a step: every bucket pending, nothing final.
  void reset();
  // Records r as final; returns the buckets it completed, ascending. Throws
  // std::logic_error for a range outside [0, total) or one overlapping a
  // range already final this step (a gradient written after its announcement).
  std::vector<size_t> mark_final(const GradRange& r);
  bool complete(size_t bucket) const { return done_[bucket] == buckets_[bucket].numel; }
  // The buckets not complete yet, ascending.
  std::vector<size_t> pending() const;

 private:
  int64_t total_ = 0;
  std::vector<GradRange> buckets_;
  std::vector<size_t> by_offset_;    // bucket indices sorted by offset
  std::vector<int64_t> done_;        // final elements per bucket this step
  std::map<int64_t, int64_t> final_;  // this step's final ranges: offset -> end
};

// Checks that `ranges` tile [0, total) exactly once; returns "" if they do,
// else what is wrong ("[a, b) overlaps [c, d)", "[a, b) is not covered", ...).
std::string tiling_error(int64_t total, const std::vector<GradRange>& ranges);

}  // namespace vt
