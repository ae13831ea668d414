// Helpers for the conv/pool/resize tests: Philox-seeded inputs and an
// elementwise comparison against a double-precision reference.
#pragma once
#include <gtest/gtest.h>

#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "kernel_test_util.h"

namespace vt {
namespace evaltest {

inline Tensor uniform(const Shape& shape, uint64_t stream, float lo = -1.f, float hi = 1.f) {
  Philox rng(99, stream);
  Tensor t = Tensor::empty(shape);
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = lo + (hi - lo) * static_cast<float>(rng.uniform());
  return t;
}

// The shared elementwise check (kernel_test_util.h), under the name these
// tests use.
inline void expect_near_all(const std::vector<double>& want, const Tensor& got, double atol, double rtol,
                            const char* what) {
  kernel_test::expect_close(want, got, atol, rtol, what);
}

}  // namespace evaltest
}  // namespace vt
