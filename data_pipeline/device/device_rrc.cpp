#include "data_pipeline/device/device_rrc.h"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "data_pipeline/resample.h"
#include "kernels/cuda/resample_u8.h"

namespace vt {

namespace {

std::string box_str(const CropBox& b) {
  return "(top " + std::to_string(b.top) + ", left " + std::to_string(b.left) + ", " + std::to_string(b.height) +
         "x" + std::to_string(b.width) + ")";
}

}  // namespace

void device_crop_resize(const Tensor& rgb, const CropBox& b, int S, const Tensor& out) {
  const char* op = "device_crop_resize";
  if (rgb.dim() != 3 || rgb.shape()[2] != 3 || rgb.dtype() != DType::U8 || !rgb.device().is_cuda() ||
      !rgb.is_contiguous())
    throw std::invalid_argument(std::string(op) + ": expected a contiguous U8 [H, W, 3] CUDA image");
  if (S <= 0 || out.dim() != 3 || out.shape()[0] != S || out.shape()[1] != S || out.shape()[2] != 3 ||
      out.dtype() != DType::U8 || out.device() != rgb.device() || !out.is_contiguous())
    throw std::invalid_argument(std::string(op) + ": expected out U8 [" + std::to_string(S) + ", " +
                                std::to_string(S) + ", 3] contiguous on " + rgb.device().str());
  const int64_t H = rgb.shape()[0], W = rgb.shape()[1];
  if (b.width <= 0 || b.height <= 0 || b.left < 0 || b.top < 0 || b.left + b.width > W || b.top + b.height > H)
    throw std::invalid_argument(std::string(op) + ": box " + box_str(b) + " outside the " + std::to_string(W) +
                                "x" + std::to_string(H) + " image");
  // resize_scaled_box at full size: resize_pil of the crop, no box.
  const PilResizePlan p = plan_resize_pil(b.width, b.height, S, S, ResampleFilter::Bicubic);
  const int64_t pitch = W * 3;
  const uint8_t* crop = rgb.data<uint8_t>() + b.top * pitch + b.left * 3;
  uint8_t* dst = out.data<uint8_t>();
  cudaStream_t stream = cudaStreamPerThread;
  if (!p.need_h && !p.need_v) {  // the crop is already S x S
    if (cudaMemcpy2DAsync(dst, S * 3, crop, pitch, S * 3, S, cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
      throw std::runtime_error(std::string(op) + ": cudaMemcpy2DAsync failed");
    return;
  }
  if (p.vertical_first) {
    if (!p.need_h) {
      cuda::resample_u8_rgb_vertical(crop, pitch, dst, S * 3, S, S, p.vert.bounds.data(), p.vert.k.data(),
                                     p.vert.ksize, stream);
      return;
    }
    const Tensor tmp = Tensor::empty({S, b.width, 3}, DType::U8, rgb.device());
    uint8_t* t = tmp.data<uint8_t>();
    cuda::resample_u8_rgb_vertical(crop, pitch, t, int64_t(b.width) * 3, b.width, S, p.vert.bounds.data(),
                                   p.vert.k.data(), p.vert.ksize, stream);
    cuda::resample_u8_rgb_horizontal(t, int64_t(b.width) * 3, 0, dst, S * 3, S, S, p.horiz.bounds.data(),
                                     p.horiz.k.data(), p.horiz.ksize, stream);
    return;
  }
  if (!p.need_v) {
    cuda::resample_u8_rgb_horizontal(crop, pitch, 0, dst, S * 3, S, S, p.horiz.bounds.data(), p.horiz.k.data(),
                                     p.horiz.ksize, stream);
    return;
  }
  if (!p.need_h) {
    cuda::resample_u8_rgb_vertical(crop, pitch, dst, S * 3, S, S, p.vert.bounds.data(), p.vert.k.data(),
                                   p.vert.ksize, stream);
    return;
  }
  // The tmp buffer goes back to the cache at scope exit while the passes
  // may still be queued: safe, the cache reuses it only for later work on
  // this stream (core/allocator.h, "Streams").
  const int rows = p.row_last - p.row_first;  // the input rows the vertical pass reads
  const Tensor tmp = Tensor::empty({rows, S, 3}, DType::U8, rgb.device());
  uint8_t* t = tmp.data<uint8_t>();
  cuda::resample_u8_rgb_horizontal(crop, pitch, p.row_first, t, S * 3, S, rows, p.horiz.bounds.data(),
                                   p.horiz.k.data(), p.horiz.ksize, stream);
  cuda::resample_u8_rgb_vertical(t, S * 3, dst, S * 3, S, S, p.vert.bounds.data(), p.vert.k.data(), p.vert.ksize,
                                 stream);
}

void device_crop_resize_batch(const std::vector<DeviceImage>& images, const std::vector<CropBox>& boxes, int S,
                              const Tensor& out) {
  if (images.size() != boxes.size())
    throw std::invalid_argument("device_crop_resize_batch: " + std::to_string(images.size()) + " images but " +
                                std::to_string(boxes.size()) + " boxes");
  const int64_t N = static_cast<int64_t>(images.size());
  if (out.dim() != 4 || out.shape()[0] != N || out.shape()[1] != S || out.shape()[2] != S || out.shape()[3] != 3)
    throw std::invalid_argument("device_crop_resize_batch: expected out U8 [" + std::to_string(N) + ", " +
                                std::to_string(S) + ", " + std::to_string(S) + ", 3]");
  rethrow_first_error(images);
  for (int64_t i = 0; i < N; ++i) device_crop_resize(images[i].rgb, boxes[i], S, out.select(0, i));
}

}  // namespace vt
