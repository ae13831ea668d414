#include "train/grad_buckets.h"

#include <algorithm>
#include <iterator>
#include <stdexcept>

namespace vt {

std::string GradRange::str() const { return "[" + std::to_string(offset) + ", " + std::to_string(end()) + ")"; }

std::string tiling_error(int64_t total, const std::vector<GradRange>& ranges) {
  for (const GradRange& r : ranges)
    if (r.numel <= 0) return "the empty range " + r.str();
  std::vector<GradRange> s = ranges;
  std::sort(s.begin(), s.end(), [](const GradRange& a, const GradRange& b) { return a.offset < b.offset; });
  int64_t at = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i].offset < at)
      return i ? s[i].str() + " overlaps " + s[i - 1].str() : s[i].str() + " starts before 0";
    if (s[i].offset > at) return GradRange{at, s[i].offset - at}.str() + " is not covered";
    at = s[i].end();
  }
  if (at > total) return s.back().str() + " ends past the buffer's " + std::to_string(total) + " elements";
  if (at < total) return GradRange{at, total - at}.str() + " is not covered";
  return "";
}

GradientBuckets::GradientBuckets(int64_t total, const std::vector<GradRange>& ready, int64_t cap) : total_(total) {
  if (total < 1) throw std::invalid_argument("GradientBuckets: the buffer has " + std::to_string(total) + " elements");
  if (cap < 0) throw std::invalid_argument("GradientBuckets: negative bucket cap " + std::to_string(cap));
  const std::string err = tiling_error(total, ready);
  if (!err.empty())
    throw std::invalid_argument("GradientBuckets: the announced gradient ranges do not tile [0, " +
                                std::to_string(total) + ") exactly once: " + err);
  if (cap == 0) {
    buckets_.push_back({0, total});
  } else {
    GradRange open{};
    for (const GradRange& r : ready) {
      const bool joins = open.numel > 0 && open.numel < cap && (r.end() == open.offset || r.offset == open.end());
      if (joins) {
        open = {std::min(open.offset, r.offset), open.numel + r.numel};
      } else {
        if (open.numel > 0) buckets_.push_back(open);
        open = r;
      }
    }
    buckets_.push_back(open);
  }
  by_offset_.resize(buckets_.size());
  for (size_t i = 0; i < by_offset_.size(); ++i) by_offset_[i] = i;
  std::sort(by_offset_.begin(), by_offset_.end(),
            [&](size_t a, size_t b) { return buckets_[a].offset < buckets_[b].offset; });
  reset();
}

void GradientBuckets::reset() {
  done_.assign(buckets_.size(), 0);
  final_.clear();
}

std::vector<size_t> GradientBuckets::mark_final(const GradRange& r) {
  if (r.numel <= 0 || r.offset < 0 || r.end() > total_)
    throw std::logic_error("GradientBuckets: gradient range " + r.str() + " outside the buffer [0, " +
                           std::to_string(total_) + ")");
  // Overlap with this step's final ranges: the one starting at or before r,
  // and the first starting after r.offset.
  auto next = final_.upper_bound(r.offset);
  if (next != final_.end() && next->first < r.end())
    throw std::logic_error("GradientBuckets: gradient range " + r.str() + " announced final again (overlaps " +
                           GradRange{next->first, next->second - next->first}.str() + ")");
  if (next != final_.begin()) {
    auto prev = std::prev(next);
    if (prev->second > r.offset)
      throw std::logic_error("GradientBuckets: gradient range " + r.str() + " announced final again (overlaps " +
                             GradRange{prev->first, prev->second - prev->first}.str() + ")");
  }
  final_[r.offset] = r.end();
  // The buckets r overlaps: from the last one starting at or before r.offset.
  auto it = std::upper_bound(by_offset_.begin(), by_offset_.end(), r.offset,
                             [&](int64_t off, size_t b) { return off < buckets_[b].offset; });
  if (it != by_offset_.begin()) --it;
  std::vector<size_t> completed;
  for (; it != by_offset_.end() && buckets_[*it].offset < r.end(); ++it) {
    const GradRange& b = buckets_[*it];
    const int64_t lo = std::max(b.offset, r.offset), hi = std::min(b.end(), r.end());
    if (hi <= lo) continue;
    done_[*it] += hi - lo;
    if (complete(*it)) completed.push_back(*it);
  }
  std::sort(completed.begin(), completed.end());
  return completed;
}

std::vector<size_t> GradientBuckets::pending() const {
  std::vector<size_t> p;
  for (size_t i = 0; i < buckets_.size(); ++i)
    if (!complete(i)) p.push_back(i);
  return p;
}

}  // namespace vt
