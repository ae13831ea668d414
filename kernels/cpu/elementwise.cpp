#include "kernels/cpu/elementwise.h"

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

}  // namespace cpu
}  // namespace vt
