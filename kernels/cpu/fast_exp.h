// exp(x) for float that `omp simd` loops can vectorise (libm's expf stays
// scalar without -ffast-math). Cephes expf: round x / ln2 to n, reduce with a
// two-part ln2, degree-6 polynomial, scale by 2^n through the exponent bits.
// Relative error about 2 ulp on [-87, 88]; inputs are clamped to that range
// (exp(-87) ~ 1.6e-38 is already 0 for every use here: GELU, SiLU, softmax).
// NaN gives NaN (a diverged step's losses must stay non-finite): it passes
// the clamp, and n is computed from 0 instead, since converting NaN to an
// integer is undefined (it gave n = INT_MIN, whose exponent shift was a
// left shift of a negative value). Internal to kernels/cpu.
#pragma once
#include <cstdint>
#include <cstring>

namespace vt {
namespace cpu {

__attribute__((always_inline)) inline float exp_approx(float x) {
  x = x < -87.0f ? -87.0f : (x > 88.0f ? 88.0f : x);
  float z = x * 1.44269504088896341f;
  z = z == z ? z : 0.0f;  // NaN: r below stays NaN, and so the result
  const int32_t n = static_cast<int32_t>(z + (z >= 0.0f ? 0.5f : -0.5f));
  const float fn = static_cast<float>(n);
  const float r = (x - fn * 0.693359375f) - fn * -2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const int32_t bits = (n + 127) << 23;
  float scale;
  std::memcpy(&scale, &bits, sizeof(scale));
  return p * scale;
}

}  // namespace cpu
}  // namespace vt
