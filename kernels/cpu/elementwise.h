// CPU elementwise kernels behind kernels/elementwise.h (n contiguous floats;
// outputs may alias inputs).
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

void axpby(float alpha, const float* a, float beta, const float* b, float* out, int64_t n);
void axpy(float alpha, const float* x, float* y, int64_t n);
void scale(const float* x, float alpha, float* out, int64_t n);
void mul(const float* a, const float* b, float* out, int64_t n);
void add(const float* a, const float* b, float* out, int64_t n);
double sum(const float* x, int64_t n);

}  // namespace cpu
}  // namespace vt
