// Float and double arithmetic rounded once per operation, the same on the
// host and in CUDA device code: nvcc contracts a * b + c into one FMA unless
// told otherwise, the host builds with -ffp-contract=off, so a CPU twin and
// its CUDA kernel agree bit for bit only when the kernel spells each
// operation with the __f*_rn / __d*_rn intrinsics. Used by the kernels whose
// twins must match exactly (kernels/augment_math.h, kernels/cuda/resize.cu).
// Header only.
#pragma once
#include "core/philox_block.h"  // VT_HOST_DEVICE

namespace vt {
namespace rounded {

VT_HOST_DEVICE inline float add(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
VT_HOST_DEVICE inline float mul(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
VT_HOST_DEVICE inline double add(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}
VT_HOST_DEVICE inline double sub(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}
VT_HOST_DEVICE inline double mul(double a, double b) {
#ifdef __CUDA_ARCH__
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}
VT_HOST_DEVICE inline double div(double a, double b) {
#ifdef __CUDA_ARCH__
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

}  // namespace rounded
}  // namespace vt
