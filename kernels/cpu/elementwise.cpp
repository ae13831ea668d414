#include "kernels/cpu/elementwise.h"

#include <cstring>

namespace vt {
namespace cpu {

namespace {
constexpr int64_t kParallelMin = 32768;  // below this, thread start-up costs more than it saves
}

void axpby(float alpha, const float* a, float beta, const float* b, float* out, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = alpha * a[i] + beta * b[i];
}

void axpy(float alpha, const float* x, float* y, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

void scale(const float* x, float alpha, float* out, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i];
}

void mul(const float* a, const float* b, float* out, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

void clamp(const float* x, float lo, float hi, float* out, int64_t n) {
  // Comparisons written so that NaN passes through, as torch.clamp.
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] < lo ? lo : (x[i] > hi ? hi : x[i]);
}

void add(const float* a, const float* b, float* out, int64_t n) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

double sum(const float* x, int64_t n) {
  double s = 0.0;
#pragma omp parallel for simd schedule(static) reduction(+ : s) if (n > kParallelMin)
  for (int64_t i = 0; i < n; ++i) s += x[i];
  return s;
}

void convert(const void* src, DType st, void* dst, DType dt, int64_t n) {
  if (st == dt) {
    std::memcpy(dst, src, static_cast<size_t>(n) * dtype_size(st));
  } else if (st == DType::F32) {
    const float* s = static_cast<const float*>(src);
    uint16_t* d = static_cast<uint16_t*>(dst);
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(s[i]);
  } else {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    float* d = static_cast<float*>(dst);
#pragma omp parallel for schedule(static) if (n > 65536)
    for (int64_t i = 0; i < n; ++i) d[i] = bf16_to_f32(s[i]);
  }
}

}  // namespace cpu
}  // namespace vt
