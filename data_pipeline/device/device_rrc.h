// DeiT's RandomResizedCrop (docs/recipes.md §2) on decoded device images:
// the box is drawn on the host from the header size exactly as the host
// path draws it (data_pipeline/transforms.h rrc_box, the same Philox
// draws), and the crop's resize to S x S is Pillow's bicubic
// (data_pipeline/resample.h resize_pil: the same fixed-point coefficients
// and pass order, run by the CUDA passes of kernels/cuda/resample_u8.h).
// Given the same decoded pixels, the result equals the host path with
// data.dct_scaling off (full-size decode; nvJPEG has no DCT-domain
// scaling in its batched API) bit for bit.
#pragma once
#include <vector>

#include "core/allocator.h"
#include "core/tensor.h"
#include "data_pipeline/device/device_jpeg.h"
#include "data_pipeline/transforms.h"

namespace vt {
class PinnedStaging;  // core/pinned_staging.h

// One crop of a batch: box `box` of the device image `rgb` (U8 [H, W, 3]
// contiguous) into row `row` of the batch.
struct DeviceCrop {
  const Tensor* rgb = nullptr;
  CropBox box;
  int64_t row = 0;
};

// Every crop resized to S x S into its row of `out` (U8 [B, S, S, 3]
// contiguous on the images' device), in two launches for the whole batch
// (cuda::resample_u8_rgb_stages: the first pass of every crop, then the
// second) after one upload, queued on `stream` (nullptr: the compute
// stream; the images must be written by work ordered before it there).
// Errors: std::invalid_argument naming the shapes, a box outside its image
// or a row outside the batch. `staging`: page-locked memory for the one
// upload of the pass descriptors and coefficients (core/pinned_staging.h);
// null: pageable memory.
void device_crop_resize_rows(const std::vector<DeviceCrop>& crops, int S, const Tensor& out,
                             PinnedStaging* staging = nullptr, CudaStreamHandle stream = nullptr);

// Resizes box `b` (full-resolution pixels, inside the image) of `rgb`
// (U8 [H, W, 3] contiguous, CUDA) to S x S into `out` (U8 [S, S, 3]
// contiguous, same device; may be a view into a batch). Queued on the
// compute stream. Errors: std::invalid_argument naming the shapes or box.
void device_crop_resize(const Tensor& rgb, const CropBox& b, int S, const Tensor& out);

// The batch: image i's box boxes[i] into out[i] (out: U8 [N, S, S, 3]
// contiguous on the images' device, N = images.size() = boxes.size()).
// Rethrows the first image's error (DeviceImage::error) before any work.
void device_crop_resize_batch(const std::vector<DeviceImage>& images, const std::vector<CropBox>& boxes, int S,
                              const Tensor& out);

}  // namespace vt
