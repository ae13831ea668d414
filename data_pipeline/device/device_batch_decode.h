// data.decode_on=device: a loader batch of encoded samples (LoaderConfig::
// encoded; Dataset::load_encoded drew each JPEG's RandomResizedCrop box from
// its header on the host) decoded by nvJPEG (device_jpeg.h, one batched call
// per batch, with its host fallbacks) and cropped and resized to S x S on
// the device (device_rrc.h: Pillow's bicubic, the host's coefficients), into
// the rows of the batch's device crops, which the device augmentation then
// takes as it takes uploaded host crops (kernels/augment.h). The batch is a
// pure function of (seed, epoch, draw id) as on the host path; the pixels
// are nvJPEG's decode of the file (a few levels from libjpeg-turbo's on a
// GPU; the same on the emulator), at full size: the host path with
// data.decode: full and data.dct_scaling: false is its reference.
//
// JPEGs nvJPEG would not take by their markers (nvjpeg_header_takes) are
// better decoded by the loader's workers (worker_filter, for
// LoaderConfig::device_decodes) than by the decoder's host fallback, which
// runs on the caller's (the training) thread.
//
// Files that neither nvJPEG nor the host decoder can decode go to the
// `undecodable` callback (BatchUploader's use: Loader::replace_undecodable,
// data.on_corrupt: error rethrows, skip replaces the sample on the host).
#pragma once
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>

#include "core/tensor.h"
#include "data_pipeline/device/device_jpeg.h"
#include "data_pipeline/batch_upload.h"
#include "data_pipeline/loader.h"

namespace vt {
class PinnedStaging;  // core/pinned_staging.h

class DeviceBatchDecoder {
 public:
  // Sample i of `batch` could not be decoded (`error`: CorruptImage naming
  // the file). Must throw, or make the sample a host crop (encoded[i].data
  // null, the crop in batch.images row i).
  using Undecodable = std::function<void(Batch& batch, int i, std::exception_ptr error)>;

  // `device`: the CUDA device index; allow_hardware as DeviceJpegDecoder's.
  explicit DeviceBatchDecoder(int device, bool allow_hardware = true);
  ~DeviceBatchDecoder();

  // Fills out[i] (U8 [B, S, S, 3] contiguous on the device, B =
  // batch.encoded.size()) for every sample with encoded[i].data, queued on
  // `stream` (nullptr: the compute stream; `out` must be free for that
  // stream to write: ordered after its readers by an event); leaves the
  // other rows. The batch's bytes must stay valid until the queued work
  // has completed. Errors: std::invalid_argument for shapes; the decoder's
  // std::runtime_error for a library or device failure.
  void decode(Batch& batch, const Tensor& out, const Undecodable& undecodable, CudaStreamHandle stream = nullptr);

  // The uploader's decode hook (data_pipeline/batch_upload.h) for batches
  // of `loader`: decode on the upload stream, undecodable files to
  // Loader::replace_undecodable.
  // This decoder and the loader must outlive the hook.
  BatchUploader::Decode uploader_hook(Loader& loader);

  // For LoaderConfig::device_decodes: nvjpeg_header_takes for this
  // decoder's backend (thread-safe; it need not outlive the decoder). The
  // loader's workers then decode and crop what nvJPEG would not take, so
  // the training thread decodes only what nvJPEG refuses or fails.
  std::function<bool(const uint8_t*, size_t)> worker_filter() const;

  bool hardware() const { return jpeg_.hardware(); }
  // Images decoded so far per path (JpegDecodePath), and host crops (the
  // loader's non-JPEG files and replacements). nvjpeg_failed: those of
  // host_fallback that nvJPEG failed (DeviceImage::nvjpeg_failed) rather
  // than refused.
  struct Counts {
    int64_t nvjpeg_hardware = 0, nvjpeg_cuda = 0, host_fallback = 0, host_crops = 0, nvjpeg_failed = 0;
  };
  const Counts& counts() const { return counts_; }

 private:
  DeviceJpegDecoder jpeg_;
  std::unique_ptr<PinnedStaging> staging_;  // the crops' one upload per batch, page-locked
  Counts counts_;
};

}  // namespace vt
