// Test helpers for the kernel tests: reproducible random tensors and
// double-precision comparison.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"

namespace vt {
namespace katest {

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

// Central finite difference of f (double -> double) around `params`,
// entry i: (f(p + h e_i) - f(p - h e_i)) / 2h.
template <typename F>
std::vector<double> finite_diff(std::vector<double> params, F f, double h = 1e-6) {
  std::vector<double> g(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    const double keep = params[i];
    params[i] = keep + h;
    const double up = f(params);
    params[i] = keep - h;
    const double down = f(params);
    params[i] = keep;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

}  // namespace katest
}  // namespace vt
