// Vectorising the clamps in the exp/erf/tanh approximations needs
// -fno-trapping-math (a compare-and-select may otherwise not be speculated);
// these kernels never rely on floating-point exception flags.
#pragma GCC optimize("no-trapping-math")

#include "kernels/cpu/activation.h"
#include "kernels/cpu/fast_exp.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vt {
namespace cpu {

namespace {

constexpr float kInvSqrt2 = 0.70710678118654752440f;
constexpr float kInvSqrt2Pi = 0.39894228040143267794f;  // 1 / sqrt(2 pi)
constexpr float kSqrt2OverPi = 0.79788456080286535588f;  // sqrt(2 / pi)
constexpr float kGeluC = 0.044715f;
constexpr int64_t kChunk = 16384;  // elements per task; smaller tensors run on one thread

// Runs body(lo, hi) over [0, n) in chunks spread across the OpenMP threads;
// the body's inner loop is a plain simd loop the compiler vectorises.
template <typename Body>
void for_chunks(int64_t n, const Body& body) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) body(c * kChunk, c + 1 == chunks ? n : (c + 1) * kChunk);
}

// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error <= 1.5e-7), odd extension.
__attribute__((always_inline))
inline float erf_approx(float x) {
  const float ax = std::fabs(x);
  const float t = 1.0f / (1.0f + 0.3275911f * ax);
  float poly = 1.061405429f;
  poly = poly * t - 1.453152027f;
  poly = poly * t + 1.421413741f;
  poly = poly * t - 0.284496736f;
  poly = poly * t + 0.254829592f;
  const float e = 1.0f - poly * t * exp_approx(-ax * ax);
  return x < 0.0f ? -e : e;
}

// tanh(u) = 1 - 2 / (1 + exp(2u)); |u| > 9 is +-1 to float precision.
__attribute__((always_inline))
inline float tanh_approx(float u) {
  u = u < -9.0f ? -9.0f : (u > 9.0f ? 9.0f : u);
  return 1.0f - 2.0f / (1.0f + exp_approx(2.0f * u));
}

}  // namespace

void gelu_erf_forward(const float* x, float* y, int64_t n) {
  for_chunks(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float v = x[i];
      y[i] = 0.5f * v * (1.0f + erf_approx(v * kInvSqrt2));
    }
  });
}

void gelu_erf_backward(const float* dy, const float* x, float* dx, int64_t n) {
  // d/dx [x Phi(x)] = Phi(x) + x phi(x)
  for_chunks(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float v = x[i];
      const float cdf = 0.5f * (1.0f + erf_approx(v * kInvSqrt2));
      const float pdf = kInvSqrt2Pi * exp_approx(-0.5f * v * v);
      dx[i] = dy[i] * (cdf + v * pdf);
    }
  });
}

void gelu_tanh_forward(const float* x, float* y, int64_t n) {
  for_chunks(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float v = x[i];
      const float t = tanh_approx(kSqrt2OverPi * (v + kGeluC * v * v * v));
      y[i] = 0.5f * v * (1.0f + t);
    }
  });
}

void gelu_tanh_backward(const float* dy, const float* x, float* dx, int64_t n) {
  for_chunks(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float v = x[i];
      const float t = tanh_approx(kSqrt2OverPi * (v + kGeluC * v * v * v));
      const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluC * v * v);
      dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
    }
  });
}

void silu_forward(const float* x, float* y, int64_t n) {
  for_chunks(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float v = x[i];
      y[i] = v / (1.0f + exp_approx(-v));
    }
  });
}

void silu_backward(const float* dy, const float* x, float* dx, int64_t n) {
  // d/dx [x s(x)] = s (1 + x (1 - s))
  for_chunks(n, [&](int64_t lo, int64_t hi) {
#pragma omp simd
    for (int64_t i = lo; i < hi; ++i) {
      const float v = x[i];
      const float s = 1.0f / (1.0f + exp_approx(-v));
      dx[i] = dy[i] * s * (1.0f + v * (1.0f - s));
    }
  });
}

}  // namespace cpu
}  // namespace vt
