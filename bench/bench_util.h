// Shared by the bench/ programs: best-of-N wall time and seeded random inputs.
#pragma once
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>

#include "core/philox.h"
#include "core/tensor.h"

namespace vt_bench {

// Best time of repeated calls after one warm-up call, repeating until
// min_s seconds have been spent and at least 3 timed calls were made.
inline double best_seconds(const std::function<void()>& f, double min_s) {
  f();
  double best = 1e30, total = 0;
  int reps = 0;
  while (total < min_s || reps < 3) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::min(best, s);
    total += s;
    ++reps;
  }
  return best;
}

// F32 CPU tensor of uniform values in [lo, hi), keyed by (seed, stream).
inline vt::Tensor random_uniform(const vt::Shape& s, uint64_t seed, uint64_t stream, float lo, float hi) {
  vt::Tensor t = vt::Tensor::empty(s);
  vt::Philox rng(seed, stream);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = lo + (hi - lo) * rng.uniform();
  return t;
}

}  // namespace vt_bench
