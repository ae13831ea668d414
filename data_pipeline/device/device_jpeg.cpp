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

  // Whether nvJPEG takes this file (header read, components, hardware
  // support); sets the size on success.
  bool nvjpeg_takes(const EncodedImage& e, DeviceImage* out) const {
    if (sniff_format(e.data, e.size) != ImageFormat::Jpeg) return false;
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
  std::vector<const unsigned char*> data(gpu.size());
  std::vector<size_t> lengths(gpu.size());
  std::vector<nvjpegImage_t> dst(gpu.size());
  for (size_t j = 0; j < gpu.size(); ++j) {
    DeviceImage& d = out[gpu[j]];
    d.rgb = Tensor::empty({d.height, d.width, 3}, DType::U8, Device::cuda(m.device));
    d.path = path;
    data[j] = batch[gpu[j]].data;
    lengths[j] = batch[gpu[j]].size;
    dst[j] = nvjpegImage_t{};
    dst[j].channel[0] = d.rgb.data<uint8_t>();
    dst[j].pitch[0] = static_cast<size_t>(d.width) * 3;
  }
  // Interleaved RGB into channel[0] (nvjpegOutputFormat_t NVJPEG_OUTPUT_RGBI).
  check(nvjpegDecodeBatchedInitialize(m.handle, m.state, static_cast<int>(gpu.size()), 1, NVJPEG_OUTPUT_RGBI),
        "nvjpegDecodeBatchedInitialize");
  const nvjpegStatus_t s =
      nvjpegDecodeBatched(m.handle, m.state, data.data(), lengths.data(), dst.data(), compute_stream());
  if (refuses_file(s)) {
    // The batched call does not say which file it refused: every image of
    // the call goes to the host decoder, which decodes it or names it.
    for (size_t i : gpu) m.decode_on_host(batch[i], &out[i]);
    return out;
  }
  check(s, "nvjpegDecodeBatched");
  return out;
}

void rethrow_first_error(const std::vector<DeviceImage>& images) {
  for (const DeviceImage& d : images)
    if (d.error) std::rethrow_exception(d.error);
}

}  // namespace vt
