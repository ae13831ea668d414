#include "data_pipeline/device/device_rrc.h"

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

#include "core/cuda_stream.h"
#include "data_pipeline/resample.h"
#include "kernels/cuda/resample_u8.h"

namespace vt {

namespace {

std::string box_str(const CropBox& b) {
  return "(top " + std::to_string(b.top) + ", left " + std::to_string(b.left) + ", " + std::to_string(b.height) +
         "x" + std::to_string(b.width) + ")";
}

}  // namespace

namespace {

void check_image(const char* op, const Tensor& rgb) {
  if (rgb.dim() != 3 || rgb.shape()[2] != 3 || rgb.dtype() != DType::U8 || !rgb.device().is_cuda() ||
      !rgb.is_contiguous())
    throw std::invalid_argument(std::string(op) + ": expected a contiguous U8 [H, W, 3] CUDA image");
}

// Appends an axis's bounds and k to the batch's coefficient list; returns
// where they start.
int64_t append_coeffs(std::vector<int>& coeffs, const PilAxisCoeffs& a) {
  const int64_t at = static_cast<int64_t>(coeffs.size());
  coeffs.insert(coeffs.end(), a.bounds.begin(), a.bounds.end());
  coeffs.insert(coeffs.end(), a.k.begin(), a.k.end());
  return at;
}

}  // namespace

void device_crop_resize_rows(const std::vector<DeviceCrop>& crops, int S, const Tensor& out,
                             PinnedStaging* staging, CudaStreamHandle stream) {
  const char* op = "device_crop_resize_rows";
  if (S <= 0 || out.dim() != 4 || out.shape()[1] != S || out.shape()[2] != S || out.shape()[3] != 3 ||
      out.dtype() != DType::U8 || !out.device().is_cuda() || !out.is_contiguous())
    throw std::invalid_argument(std::string(op) + ": expected out U8 [B, " + std::to_string(S) + ", " +
                                std::to_string(S) + ", 3] contiguous on a CUDA device, got " + out.str());
  if (crops.empty()) return;
  const int64_t row_bytes = int64_t(S) * S * 3;
  // Each crop as resize_pil runs it (plan_resize_pil: which passes, in which
  // order, over which rows): a first pass into a slab of `tmp` when there
  // are two, else straight into the batch; a crop already S x S is one
  // pass with the identity coefficients (one tap of weight 1 << 22).
  std::vector<cuda::ResamplePass> first, second;
  std::vector<int> coeffs;
  struct Slab {
    size_t pass;  // in `first`
    int64_t offset, pitch;
  };
  std::vector<Slab> slabs;
  int64_t tmp_bytes = 0;
  for (const DeviceCrop& c : crops) {
    check_image(op, *c.rgb);
    const Tensor& rgb = *c.rgb;
    if (rgb.device() != out.device())
      throw std::invalid_argument(std::string(op) + ": an image on " + rgb.device().str() + ", out on " +
                                  out.device().str());
    const CropBox& b = c.box;
    const int64_t H = rgb.shape()[0], W = rgb.shape()[1];
    if (b.width <= 0 || b.height <= 0 || b.left < 0 || b.top < 0 || b.left + b.width > W || b.top + b.height > H)
      throw std::invalid_argument(std::string(op) + ": box " + box_str(b) + " outside the " + std::to_string(W) +
                                  "x" + std::to_string(H) + " image");
    if (c.row < 0 || c.row >= out.shape()[0])
      throw std::invalid_argument(std::string(op) + ": row " + std::to_string(c.row) + " outside a batch of " +
                                  std::to_string(out.shape()[0]));
    const PilResizePlan p = plan_resize_pil(b.width, b.height, S, S, ResampleFilter::Bicubic);
    cuda::ResamplePass in;
    in.in_pitch = W * 3;
    in.in = rgb.data<uint8_t>() + b.top * in.in_pitch + b.left * 3;
    uint8_t* dst = out.data<uint8_t>() + c.row * row_bytes;
    auto pass = [&](const PilAxisCoeffs& axis, bool vertical, int out_w, int out_h) {
      cuda::ResamplePass q = in;
      q.vertical = vertical ? 1 : 0;
      q.out_w = out_w, q.out_h = out_h, q.ksize = axis.ksize;
      q.coeffs = append_coeffs(coeffs, axis);
      return q;
    };
    auto to_dst = [&](cuda::ResamplePass q) {
      q.out = dst, q.out_pitch = int64_t(S) * 3;
      return q;
    };
    if (!p.need_h && !p.need_v) {  // the crop is already S x S: copied through one tap of weight 1
      PilAxisCoeffs id;
      id.ksize = 1;
      for (int x = 0; x < S; ++x) id.bounds.insert(id.bounds.end(), {x, 1}), id.k.push_back(1 << 22);
      first.push_back(to_dst(pass(id, false, S, S)));
    } else if (!p.need_h || !p.need_v) {  // one pass, straight into the batch
      first.push_back(to_dst(p.need_h ? pass(p.horiz, false, S, S) : pass(p.vert, true, S, S)));
    } else {
      // Vertical first: the crop's columns to S rows, then across; else the
      // rows the vertical pass reads (row_first..row_last) across, then down.
      const int tmp_w = p.vertical_first ? b.width : S, tmp_h = p.vertical_first ? S : p.row_last - p.row_first;
      cuda::ResamplePass a = p.vertical_first ? pass(p.vert, true, tmp_w, tmp_h) : pass(p.horiz, false, tmp_w, tmp_h);
      if (!p.vertical_first) a.row_offset = p.row_first;
      a.out_pitch = int64_t(tmp_w) * 3;
      slabs.push_back({first.size(), tmp_bytes, a.out_pitch});
      tmp_bytes += a.out_pitch * tmp_h;
      first.push_back(a);
      cuda::ResamplePass z = p.vertical_first ? pass(p.horiz, false, S, S) : pass(p.vert, true, S, S);
      z.in_pitch = a.out_pitch;
      second.push_back(to_dst(z));  // `in` set once tmp is allocated
    }
  }
  // The slabs: one buffer for the batch, from `stream`'s cache. It goes back
  // at return while the passes may still be queued: safe, the cache reuses
  // it only for later work on that stream (core/allocator.h, "Streams").
  const Tensor tmp = cuda_empty_on({std::max<int64_t>(tmp_bytes, 1)}, DType::U8, out.device().index, stream);
  for (size_t j = 0; j < slabs.size(); ++j) {
    uint8_t* at = tmp.data<uint8_t>() + slabs[j].offset;
    first[slabs[j].pass].out = at;
    second[j].in = at;
  }
  cuda::resample_u8_rgb_stages({first, second}, coeffs,
                               stream ? static_cast<cudaStream_t>(stream) : cudaStreamPerThread, staging);
}

void device_crop_resize(const Tensor& rgb, const CropBox& b, int S, const Tensor& out) {
  if (S <= 0 || out.dim() != 3 || out.shape()[0] != S || out.shape()[1] != S || out.shape()[2] != 3 ||
      out.dtype() != DType::U8 || out.device() != rgb.device() || !out.is_contiguous())
    throw std::invalid_argument("device_crop_resize: expected out U8 [" + std::to_string(S) + ", " +
                                std::to_string(S) + ", 3] contiguous on " + rgb.device().str());
  check_image("device_crop_resize", rgb);
  device_crop_resize_rows({{&rgb, b, 0}}, S, Tensor::wrap(out.raw(), {1, S, S, 3}, DType::U8, out.device()));
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
  std::vector<DeviceCrop> crops;
  for (int64_t i = 0; i < N; ++i) crops.push_back({&images[static_cast<size_t>(i)].rgb, boxes[static_cast<size_t>(i)], i});
  device_crop_resize_rows(crops, S, out);
}

}  // namespace vt
