// CUDA elementwise helpers behind kernels/elementwise.h: n contiguous
// elements in `io` (F32 or BF16), fp32 arithmetic, outputs may alias inputs.
// sum() accumulates in double by a deterministic two-stage reduction and
// synchronises `stream` to return the value to the host.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "core/dtype.h"

namespace vt {
namespace cuda {

// out = alpha * a + beta * b  (add is alpha = beta = 1)
void axpby(float alpha, const void* a, float beta, const void* b, void* out, int64_t n, DType io,
           cudaStream_t stream = 0);
// y += alpha * x
void axpy(float alpha, const void* x, void* y, int64_t n, DType io, cudaStream_t stream = 0);
// out = alpha * x
void scale(const void* x, float alpha, void* out, int64_t n, DType io, cudaStream_t stream = 0);
// out = a * b
void mul(const void* a, const void* b, void* out, int64_t n, DType io, cudaStream_t stream = 0);
// out = min(max(x, lo), hi), NaN passed through
void clamp(const void* x, float lo, float hi, void* out, int64_t n, DType io, cudaStream_t stream = 0);
// sum of all elements (squares = false) or of their squares (squares = true).
double sum(const void* x, int64_t n, bool squares, DType io, cudaStream_t stream = 0);
// The same sum written to the device double *out, without synchronising
// (the same reduction order, so the same bits as sum()).
void sum_to_device(const void* x, int64_t n, bool squares, DType io, double* out, cudaStream_t stream = 0);

// dst = src between F32 and BF16 (nearest even; a copy for equal dtypes).
void convert(const void* src, DType src_type, void* dst, DType dst_type, int64_t n, cudaStream_t stream = 0);

}  // namespace cuda
}  // namespace vt
