// torch.nn.functional.conv2d in double, straight from its definition (zero
// padding pad_h/pad_w on both sides; groups, stride, dilation, bias, ReLU):
// the independent oracle of the CPU conv tests and, through them, of the
// CUDA conv tests. Returns y [N, O, OH, OW] row-major; `out` is its shape.
#pragma once
#include <algorithm>
#include <vector>

#include "core/tensor.h"
#include "kernels/conv.h"

namespace vt {
namespace convtest {

inline std::vector<double> naive_conv(const Tensor& x, const Tensor& w, const Tensor& b, const Conv2dParams& p,
                               const Shape& out) {
  const Tensor xc = x.contiguous();
  const int64_t N = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const int64_t O = w.size(0), Cg = w.size(1), KH = w.size(2), KW = w.size(3);
  const int64_t OH = out[2], OW = out[3], Og = O / p.groups;
  std::vector<double> y(static_cast<size_t>(N * O * OH * OW));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < OH; ++i)
        for (int64_t j = 0; j < OW; ++j) {
          double s = b.defined() ? b.f32()[o] : 0.0;
          const int64_t g = o / Og;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t a = 0; a < KH; ++a)
              for (int64_t bb = 0; bb < KW; ++bb) {
                const int64_t hi = i * p.stride_h - p.pad_h + a * p.dilation_h;
                const int64_t wi = j * p.stride_w - p.pad_w + bb * p.dilation_w;
                if (hi < 0 || hi >= H || wi < 0 || wi >= W) continue;
                s += static_cast<double>(xc.f32()[((n * C + g * Cg + c) * H + hi) * W + wi]) *
                     w.f32()[((o * Cg + c) * KH + a) * KW + bb];
              }
          if (p.relu) s = std::max(s, 0.0);
          y[((n * O + o) * OH + i) * OW + j] = s;
        }
  return y;
}

}  // namespace convtest
}  // namespace vt
