// CPU convolution behind kernels/conv.h (oneDNN). Shapes and strides are in
// elements; x and y may be strided views (W stride 1).
#pragma once
#include <cstdint>
#include <memory>

#include "kernels/conv_desc.h"

namespace vt {
namespace cpu {

struct CpuConvOptions {
  // Conv2dParams::cpu_winograd.
  bool winograd = false;
  // Conv2dParams::frozen_weights: the storage holding w. While it lives, w
  // is reordered into the kernel's layout once and the copy reused (a new
  // storage at the same address finds the old one expired). Empty: w is
  // reordered on every call.
  std::weak_ptr<const void> weights_owner;
};

// w is [O, C/G, KH, KW] contiguous; b is [O] or nullptr.
void conv2d_forward(const Conv2dDesc& d, const float* x, const float* w, const float* b, float* y,
                    const CpuConvOptions& opt = {});

}  // namespace cpu
}  // namespace vt
