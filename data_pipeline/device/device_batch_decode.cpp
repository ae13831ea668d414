#include "data_pipeline/device/device_batch_decode.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "data_pipeline/device/device_rrc.h"
#include "core/pinned_staging.h"

namespace vt {

DeviceBatchDecoder::DeviceBatchDecoder(int device, bool allow_hardware)
    : jpeg_(device, allow_hardware), staging_(std::make_unique<PinnedStaging>(device)) {}

DeviceBatchDecoder::~DeviceBatchDecoder() = default;

void DeviceBatchDecoder::decode(Batch& batch, const Tensor& out, const Undecodable& undecodable,
                                CudaStreamHandle stream) {
  const int64_t B = static_cast<int64_t>(batch.encoded.size());
  if (out.dim() != 4 || out.shape()[0] != B || out.shape()[1] != out.shape()[2] || out.shape()[3] != 3 ||
      out.dtype() != DType::U8 || !out.device().is_cuda() || !out.is_contiguous())
    throw std::invalid_argument("DeviceBatchDecoder: expected out U8 [" + std::to_string(B) +
                                ", S, S, 3] contiguous on a CUDA device, got " + out.str());
  const int S = static_cast<int>(out.shape()[1]);
  std::vector<EncodedImage> files;
  std::vector<int> rows;  // the batch row of each file
  for (int64_t i = 0; i < B; ++i) {
    const EncodedSample& e = batch.encoded[static_cast<size_t>(i)];
    if (!e.data) continue;
    files.push_back({e.data, e.size, e.name});
    rows.push_back(static_cast<int>(i));
  }
  // The decoded images are freed at return while the crops are still
  // queued: safe, their memory is `stream`'s, which the caching allocator
  // hands only to later work on that stream (core/allocator.h, "Streams").
  const std::vector<DeviceImage> images = jpeg_.decode(files, stream);
  std::vector<DeviceCrop> crops;
  crops.reserve(images.size());
  for (size_t j = 0; j < images.size(); ++j) {
    const DeviceImage& d = images[j];
    if (d.error) {
      undecodable(batch, rows[j], d.error);
      if (batch.encoded[static_cast<size_t>(rows[j])].data)
        throw std::logic_error("DeviceBatchDecoder: the undecodable callback left sample " + std::to_string(rows[j]) +
                               " encoded");
      ++counts_.host_crops;
      continue;
    }
    switch (d.path) {
      case JpegDecodePath::NvjpegHardware: ++counts_.nvjpeg_hardware; break;
      case JpegDecodePath::NvjpegCuda: ++counts_.nvjpeg_cuda; break;
      case JpegDecodePath::Host: ++counts_.host_fallback; break;
    }
    if (d.nvjpeg_failed) ++counts_.nvjpeg_failed;
    crops.push_back({&d.rgb, batch.encoded[static_cast<size_t>(rows[j])].box, rows[j]});
  }
  device_crop_resize_rows(crops, S, out, staging_.get(), stream);  // one upload, two launches for the batch
  counts_.host_crops += B - static_cast<int64_t>(files.size());
}

std::function<bool(const uint8_t*, size_t)> DeviceBatchDecoder::worker_filter() const {
  const bool hw = hardware();
  return [hw](const uint8_t* data, size_t size) { return nvjpeg_header_takes(data, size, hw); };
}

BatchUploader::Decode DeviceBatchDecoder::uploader_hook(Loader& loader) {
  return [this, &loader](Batch& batch, const Tensor& images, CudaStreamHandle stream) {
    decode(
        batch, images,
        [&loader](Batch& b, int i, std::exception_ptr e) { loader.replace_undecodable(b, i, std::move(e)); }, stream);
  };
}

}  // namespace vt
