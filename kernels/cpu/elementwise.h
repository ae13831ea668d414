// CPU elementwise kernels behind kernels/elementwise.h (n contiguous floats;
// outputs may alias inputs).
#pragma once
#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cpu {

void axpby(float alpha, const float* a, float beta, const float* b, float* out, int64_t n);
void axpy(float alpha, const float* x, float* y, int64_t n);
void scale(const float* x, float alpha, float* out, int64_t n);
void mul(const float* a, const float* b, float* out, int64_t n);
void clamp(const float* x, float lo, float hi, float* out, int64_t n);
void add(const float* a, const float* b, float* out, int64_t n);
double sum(const float* x, int64_t n);

// dst = src between F32 and BF16 (nearest even), n elements.
void convert(const void* src, DType src_type, void* dst, DType dst_type, int64_t n);

}  // namespace cpu
}  // namespace vt
