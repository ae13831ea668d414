// Passes of Pillow's separable fixed-point resampling (libImaging/
// Resample.c, ImagingResampleHorizontal_8bpc / ImagingResampleVertical_8bpc)
// on interleaved uint8 RGB on the device, many images at once: the CUDA twin
// of the passes in data_pipeline/resample.cpp, used by the device
// RandomResizedCrop (data_pipeline/device/device_rrc.h). Integer arithmetic
// throughout, so the bytes equal the host's exactly:
//   out = clip8((2^21 + sum_t in[first + t] * k[t]) >> 22)   per channel.
// Errors: std::invalid_argument for sizes that do not match the bounds,
// std::runtime_error naming the CUDA error.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "core/pinned_staging.h"

namespace vt {
namespace cuda {

// One pass of one image.
// in:  rows of 3 * in_w bytes, `in_pitch` bytes apart (a crop is a pointer
//      into a larger image); out: out_h rows of 3 * out_w bytes, `out_pitch`
//      apart. Horizontal (vertical = 0): out[y][xx] reads row y + row_offset,
//      columns first..; vertical (vertical = 1, row_offset 0): out[yy][x]
//      reads rows first.. of column x. Its bounds (2 ints per output index:
//      [first, count]) and k (ksize ints per output index; data_pipeline/
//      resample.h, PilAxisCoeffs) stand at `coeffs` in the batch's
//      coefficient list: 2 * n_out ints of bounds, then n_out * ksize of k
//      (n_out = out_w horizontally, out_h vertically).
struct ResamplePass {
  const uint8_t* in = nullptr;
  int64_t in_pitch = 0;
  uint8_t* out = nullptr;
  int64_t out_pitch = 0;
  int32_t row_offset = 0, out_w = 0, out_h = 0, vertical = 0, ksize = 0;
  int64_t coeffs = 0;
};


// Stage after stage, one launch each: every pass of a stage at once
// (passes of a stage write disjoint outputs; a stage may read the outputs
// of the stages before it), all the descriptors and the coefficients
// uploaded first in one copy on `stream` (through `staging`,
// core/pinned_staging.h, when given, else from pageable memory). A batch of
// crops costs one upload and two launches (first passes, then second
// passes).
void resample_u8_rgb_stages(const std::vector<std::vector<ResamplePass>>& stages, const std::vector<int>& coeffs,
                            cudaStream_t stream = 0, PinnedStaging* staging = nullptr);

}  // namespace cuda
}  // namespace vt
