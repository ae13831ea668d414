#include "data_pipeline/device/device_jpeg.h"

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include <stdexcept>
#include <string>

#include "data_pipeline/decode.h"
#include "data_pipeline/image_header.h"

namespace vt {

namespace {

const char* status_name(nvjpegStatus_t s) {
  switch (s) {
    case NVJPEG_STATUS_SUCCESS: return "NVJPEG_STATUS_SUCCESS";
    case NVJPEG_STATUS_NOT_INITIALIZED: return "NVJPEG_STATUS_NOT_INITIALIZED";
    case NVJPEG_STATUS_INVALID_PARAMETER: return "NVJPEG_STATUS_INVALID_PARAMETER";
    case NVJPEG_STATUS_BAD_JPEG: return "NVJPEG_STATUS_BAD_JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED: return "NVJPEG_STATUS_JPEG_NOT_SUPPORTED";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE: return "NVJPEG_STATUS_ALLOCATOR_FAILURE";
    case NVJPEG_STATUS_EXECUTION_FAILED: return "NVJPEG_STATUS_EXECUTION_FAILED";
    case NVJPEG_STATUS_ARCH_MISMATCH: return "NVJPEG_STATUS_ARCH_MISMATCH";
    case NVJPEG_STATUS_INTERNAL_ERROR: return "NVJPEG_STATUS_INTERNAL_ERROR";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: return "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM: return "NVJPEG_STATUS_INCOMPLETE_BITSTREAM";
  }
  return "unknown nvJPEG status";
}

void check(nvjpegStatus_t s, const char* call) {
  if (s != NVJPEG_STATUS_SUCCESS) throw std::runtime_error(std::string(call) + ": " + status_name(s));
}

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": CUDA error: " + cudaGetErrorString(e));
}

// Statuses about the library, the device or this module's use of them
// rather than the file (allocation, execution, set-up, a bad argument):
// these throw, so a plumbing bug is never hidden behind the fallback. Any other failure
// (NVJPEG_STATUS_BAD_JPEG, _JPEG_NOT_SUPPORTED, _INCOMPLETE_BITSTREAM,
// _IMPLEMENTATION_NOT_SUPPORTED for an encoding the backend lacks, ...) is
// about the file: it goes to the host decoder, which decodes it or names it
// corrupt, so one odd file never stops a run that the host path would not stop.
bool device_failure(nvjpegStatus_t s) {
  return s == NVJPEG_STATUS_ALLOCATOR_FAILURE || s == NVJPEG_STATUS_EXECUTION_FAILED ||
         s == NVJPEG_STATUS_NOT_INITIALIZED || s == NVJPEG_STATUS_INTERNAL_ERROR ||
         s == NVJPEG_STATUS_ARCH_MISMATCH || s == NVJPEG_STATUS_INVALID_PARAMETER;
}
bool refuses_file(nvjpegStatus_t s) { return s != NVJPEG_STATUS_SUCCESS && !device_failure(s); }

// Whether the JPEG's last marker, before at most 16 bytes of zero or 0xFF
// padding, is EOI (FF D9).
bool ends_with_eoi(const uint8_t* data, size_t size) {
  size_t end = size;
  for (int pad = 0; pad < 16 && end > 2 && (data[end - 1] == 0x00 || data[end - 1] == 0xFF) &&
                    !(data[end - 2] == 0xFF && data[end - 1] == 0xD9);
       ++pad)
    --end;
  return end >= 2 && data[end - 2] == 0xFF && data[end - 1] == 0xD9;
}

// The op library's compute stream (kernels/cuda/common.cuh: libraries get
// the per-thread default stream by name).
cudaStream_t compute_stream() { return cudaStreamPerThread; }

}  // namespace

const char* jpeg_decode_path_name(JpegDecodePath p) {
  switch (p) {
    case JpegDecodePath::NvjpegHardware: return "nvjpeg-hardware";
    case JpegDecodePath::NvjpegCuda: return "nvjpeg-cuda";
    case JpegDecodePath::Host: return "host";
  }
  return "?";
}

struct DeviceJpegDecoder::Impl {
  int device = 0;
  bool hardware = false;
  nvjpegHandle_t handle = nullptr;
  nvjpegJpegState_t state = nullptr;
  nvjpegJpegStream_t stream = nullptr;  // parsed headers for nvjpegDecodeBatchedSupported

  ~Impl() {
    if (stream) nvjpegJpegStreamDestroy(stream);
    if (state) nvjpegJpegStateDestroy(state);
    if (handle) nvjpegDestroy(handle);
  }

  // The host decoder, then an upload (pageable memory: the copy has read
  // the source when cudaMemcpy2DAsync returns).
  void decode_on_host(const EncodedImage& e, DeviceImage* out) const {
    try {
      const DecodedImage d = decode_image(e.data, e.size, e.name);
      out->width = d.rgb.cols;
      out->height = d.rgb.rows;
      out->rgb = Tensor::empty({d.rgb.rows, d.rgb.cols, 3}, DType::U8, Device::cuda(device));
      const size_t row = static_cast<size_t>(d.rgb.cols) * 3;
      check_cuda(cudaMemcpy2DAsync(out->rgb.data<uint8_t>(), row, d.rgb.data, d.rgb.step, row, d.rgb.rows,
                                   cudaMemcpyHostToDevice, compute_stream()),
                 "DeviceJpegDecoder: upload of a host-decoded image");
      out->path = JpegDecodePath::Host;
      out->error = nullptr;
    } catch (const CorruptImage&) {
      out->rgb = Tensor();
      out->path = JpegDecodePath::Host;
      out->error = std::current_exception();
    }
  }

  void decode_batched(const std::vector<EncodedImage>& batch, const std::vector<size_t>& idx,
                      std::vector<DeviceImage>& out) const;

  // Whether nvJPEG takes this file (header read, components, hardware
  // support, an end-of-image marker); sets the size on success.
  bool nvjpeg_takes(const EncodedImage& e, DeviceImage* out) const {
    if (sniff_format(e.data, e.size) != ImageFormat::Jpeg) return false;
    // A file cut short has no EOI marker at its end. The host decoder
    // appends one and refuses the file when its data runs out ("premature
    // end"), decodes it when only the EOI was missing; nvJPEG may pad the
    // missing data and decode it. Such files go to the host decoder, so the
    // device path skips, stops on or decodes them as the host path does.
    if (!ends_with_eoi(e.data, e.size)) return false;
    int comps = 0;
    nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
    int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
    const nvjpegStatus_t s = nvjpegGetImageInfo(handle, e.data, e.size, &comps, &css, widths, heights);
    if (refuses_file(s)) return false;
    check(s, "nvjpegGetImageInfo");
    // 4 components: CMYK/YCCK, converted by the host decoder's convention.
    if ((comps != 1 && comps != 3) || css == NVJPEG_CSS_UNKNOWN || widths[0] <= 0 || heights[0] <= 0) return false;
    check_pixel_limit(widths[0], heights[0], e.name);  // the host path's limit, CorruptImage naming the file
    if (hardware) {
      const nvjpegStatus_t p = nvjpegJpegStreamParse(handle, e.data, e.size, 0, 0, stream);
      if (refuses_file(p)) return false;
      check(p, "nvjpegJpegStreamParse");
      int unsupported = 1;  // 0 means "supported" (nvJPEG docs, nvjpegDecodeBatchedSupported)
      check(nvjpegDecodeBatchedSupported(handle, stream, &unsupported), "nvjpegDecodeBatchedSupported");
      if (unsupported != 0) return false;
    }
    out->width = widths[0];
    out->height = heights[0];
    return true;
  }
};

DeviceJpegDecoder::DeviceJpegDecoder(int device, bool allow_hardware) : impl_(std::make_unique<Impl>()) {
  impl_->device = device;
  check_cuda(cudaSetDevice(device), "DeviceJpegDecoder: cudaSetDevice");
  // The hardware backend is refused (NVJPEG_STATUS_ARCH_MISMATCH or
  // _NOT_SUPPORTED statuses) on GPUs without JPEG engines: then the CUDA one.
  if (allow_hardware &&
      nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &impl_->handle) ==
          NVJPEG_STATUS_SUCCESS) {
    impl_->hardware = true;
  } else {
    impl_->handle = nullptr;
    check(nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, nullptr, nullptr, NVJPEG_FLAGS_DEFAULT, &impl_->handle),
          "nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT)");
  }
  check(nvjpegJpegStateCreate(impl_->handle, &impl_->state), "nvjpegJpegStateCreate");
  check(nvjpegJpegStreamCreate(impl_->handle, &impl_->stream), "nvjpegJpegStreamCreate");
}

DeviceJpegDecoder::~DeviceJpegDecoder() = default;

bool DeviceJpegDecoder::hardware() const { return impl_->hardware; }

std::vector<DeviceImage> DeviceJpegDecoder::decode(const std::vector<EncodedImage>& batch) {
  Impl& m = *impl_;
  check_cuda(cudaSetDevice(m.device), "DeviceJpegDecoder: cudaSetDevice");
  std::vector<DeviceImage> out(batch.size());
  std::vector<size_t> gpu;  // indices decoded by nvJPEG
  for (size_t i = 0; i < batch.size(); ++i) {
    try {
      if (m.nvjpeg_takes(batch[i], &out[i])) {
        gpu.push_back(i);
        continue;
      }
    } catch (const CorruptImage&) {  // over the pixel limit
      out[i].error = std::current_exception();
      continue;
    }
    m.decode_on_host(batch[i], &out[i]);
  }
  if (gpu.empty()) return out;

  const JpegDecodePath path = m.hardware ? JpegDecodePath::NvjpegHardware : JpegDecodePath::NvjpegCuda;
  for (size_t i : gpu) {
    DeviceImage& d = out[i];
    d.rgb = Tensor::empty({d.height, d.width, 3}, DType::U8, Device::cuda(m.device));
    d.path = path;
  }
  m.decode_batched(batch, gpu, out);
  return out;
}

// One nvjpegDecodeBatched call for the images `idx` of `batch`. A call that
// refuses a file does not say which one: the call is split in halves and
// each half decoded again, down to single files, which go to the host
// decoder (it decodes them or names them corrupt). One bad file in a batch
// of B costs about 2 log2(B) calls instead of B host decodes.
void DeviceJpegDecoder::Impl::decode_batched(const std::vector<EncodedImage>& batch, const std::vector<size_t>& idx,
                                            std::vector<DeviceImage>& out) const {
  if (idx.empty()) return;
  std::vector<const unsigned char*> data(idx.size());
  std::vector<size_t> lengths(idx.size());
  std::vector<nvjpegImage_t> dst(idx.size());
  for (size_t j = 0; j < idx.size(); ++j) {
    DeviceImage& d = out[idx[j]];
    data[j] = batch[idx[j]].data;
    lengths[j] = batch[idx[j]].size;
    dst[j] = nvjpegImage_t{};
    dst[j].channel[0] = d.rgb.data<uint8_t>();
    dst[j].pitch[0] = static_cast<size_t>(d.width) * 3;
  }
  // Interleaved RGB into channel[0] (nvjpegOutputFormat_t NVJPEG_OUTPUT_RGBI).
  check(nvjpegDecodeBatchedInitialize(handle, state, static_cast<int>(idx.size()), 1, NVJPEG_OUTPUT_RGBI),
        "nvjpegDecodeBatchedInitialize");
  const nvjpegStatus_t s = nvjpegDecodeBatched(handle, state, data.data(), lengths.data(), dst.data(), compute_stream());
  if (!refuses_file(s)) {
    check(s, "nvjpegDecodeBatched");
    return;
  }
  if (idx.size() == 1) {
    decode_on_host(batch[idx[0]], &out[idx[0]]);
    return;
  }
  const auto mid = idx.begin() + static_cast<std::ptrdiff_t>(idx.size() / 2);
  decode_batched(batch, std::vector<size_t>(idx.begin(), mid), out);
  decode_batched(batch, std::vector<size_t>(mid, idx.end()), out);
}

void rethrow_first_error(const std::vector<DeviceImage>& images) {
  for (const DeviceImage& d : images)
    if (d.error) std::rethrow_exception(d.error);
}

}  // namespace vt
