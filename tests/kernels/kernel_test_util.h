// Helpers of the kernel tests: reproducible random tensors and elementwise
// comparison against double-precision references. (Finite-difference
// gradients: tests/gradcheck.h.)
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"

namespace vt {
namespace kernel_test {

// Normal(mean, std) entries drawn from Philox(seed, stream).
inline Tensor randn(const Shape& shape, uint64_t stream, double std = 1.0, double mean = 0.0) {
  Philox rng(1234, stream);
  Tensor t = Tensor::empty(shape);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.normal(mean, std));
  return t;
}

inline std::vector<double> to_double(const Tensor& t) {
  std::vector<float> f = t.contiguous().to_vector();
  return std::vector<double>(f.begin(), f.end());
}

// |got - want| <= atol + rtol |want| elementwise, reporting the first failure.
inline void expect_close(const std::vector<double>& want, const Tensor& got, double atol, double rtol,
                         const char* what) {
  std::vector<float> g = got.contiguous().to_vector();
  ASSERT_EQ(want.size(), g.size()) << what;
  for (size_t i = 0; i < g.size(); ++i) {
    const double tol = atol + rtol * std::fabs(want[i]);
    if (!(std::fabs(g[i] - want[i]) <= tol)) {
      ADD_FAILURE() << what << "[" << i << "]: got " << g[i] << ", want " << want[i] << " (tol " << tol << ")";
      return;
    }
  }
}

}  // namespace kernel_test
}  // namespace vt
