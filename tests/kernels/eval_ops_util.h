// Helpers for the conv/pool/resize tests: Philox-seeded inputs and an
// elementwise comparison against a double-precision reference.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"

namespace vt {
namespace evaltest {

inline Tensor uniform(const Shape& shape, uint64_t stream, float lo = -1.f, float hi = 1.f) {
  Philox rng(99, stream);
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = lo + (hi - lo) * static_cast<float>(rng.uniform());
  return t;
}

inline void expect_near_all(const std::vector<double>& want, const Tensor& got, double atol, double rtol,
                            const char* what) {
  std::vector<float> g = got.contiguous().to_vector();
  ASSERT_EQ(want.size(), g.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs(g[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << "[" << i << "]: got " << g[i] << ", want " << want[i];
      return;
    }
  }
}

}  // namespace evaltest
}  // namespace vt
