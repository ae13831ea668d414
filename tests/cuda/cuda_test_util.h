// Helpers for the CUDA tests: each CUDA kernel is compared with its CPU twin
// (kernels/cpu/*.h) or a naive double reference on the same inputs. bf16
// cases feed both sides the same bf16-rounded values, so the only expected
// difference is the final rounding of bf16 outputs. Tests skip themselves
// when no GPU is visible (CI), so they compile everywhere and run on GPUs.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/philox.h"
#include "core/tensor.h"

#define VT_SKIP_WITHOUT_GPU()                                              \
  do {                                                                     \
    if (!::vt::cuda_available()) GTEST_SKIP() << "no CUDA device visible"; \
  } while (0)

namespace vt {
namespace cudatest {

// Normal(mean, std) values from Philox(4321, stream).
inline std::vector<float> randn(size_t n, uint64_t stream, double std = 1.0, double mean = 0.0) {
  Philox rng(4321, stream);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(rng.normal(mean, std));
  return v;
}

// A CPU F32 tensor of shape s filled with randn(numel, stream).
inline Tensor randn_tensor(const Shape& s, uint64_t stream) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return Tensor::from_vector(randn(static_cast<size_t>(n), stream), s);
}

// The values a bf16 tensor holds (round to nearest even); identity for F32.
inline std::vector<float> representable(std::vector<float> v, DType dt) {
  if (dt == DType::BF16)
    for (auto& x : v) x = bf16_to_f32(f32_to_bf16(x));
  return v;
}

// A CUDA tensor of dtype dt holding v (shape [n]).
inline Tensor to_device(const std::vector<float>& v, DType dt) {
  Tensor h = Tensor::from_vector(v, {static_cast<int64_t>(v.size())});
  return h.to(dt).to(Device::cuda(0));
}

inline std::vector<float> to_host(const Tensor& t) { return t.to_vector(); }

// A device buffer pre-filled with `init` (so "overwrite" and "accumulate"
// semantics are both observable).
inline Tensor device_filled(size_t n, DType dt, const std::vector<float>& init) {
  return to_device(init.empty() ? std::vector<float>(n, 0.0f) : init, dt);
}

// Normwise comparison: max |got - want| <= tol * max(max |want|, 1e-30).
// Reports the worst element.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double tol,
                         const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0, worst = -1.0;
  size_t at = 0;
  for (size_t i = 0; i < want.size(); ++i) scale = std::max(scale, std::fabs(static_cast<double>(want[i])));
  for (size_t i = 0; i < want.size(); ++i) {
    const double e = std::fabs(static_cast<double>(got[i]) - want[i]);
    if (!(e <= worst)) worst = e, at = i;  // NaN counts as worst
  }
  if (want.empty()) return;
  EXPECT_TRUE(worst <= tol * std::max(scale, 1e-30))
      << what << ": max error " << worst << " at [" << at << "] (got " << got[at] << ", want " << want[at]
      << "), scale " << scale << ", tol " << tol;
}

// Tolerance of outputs written in dt: fp32 arithmetic differences only for
// F32; one bf16 rounding (2^-9 relative) plus margin for BF16.
inline double out_tol(DType dt) { return dt == DType::BF16 ? 1e-2 : 1e-5; }

}  // namespace cudatest
}  // namespace vt
