// CPU drop-path kernels on raw fp32 pointers; see kernels/drop_path.h.
#pragma once
#include <cstdint>

namespace vt {
namespace cpu {

// x, out: B rows of n elements each; out may equal x.
void drop_path_forward(const float* x, const float* scales, float* out, int64_t B, int64_t n);
void drop_path_add(const float* x, const float* scales, float* residual, int64_t B, int64_t n);

}  // namespace cpu
}  // namespace vt
