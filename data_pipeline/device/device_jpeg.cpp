#include "data_pipeline/device/device_jpeg.h"

#include <cuda_runtime_api.h>
#include <nvjpeg.h>

#include <array>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/cuda_stream.h"
#include "core/pinned_staging.h"
#include "core/log.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/image_header.h"
#include "data_pipeline/jpeg_encode.h"

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

// Statuses about the library or the device alone (allocation, set-up, an
// architecture without the backend): these throw, naming the call.
bool device_failure(nvjpegStatus_t s) {
  return s == NVJPEG_STATUS_ALLOCATOR_FAILURE || s == NVJPEG_STATUS_NOT_INITIALIZED ||
         s == NVJPEG_STATUS_ARCH_MISMATCH;
}
// Statuses that mean a failure of the device or the library, or one that
// the file causes: real nvJPEG returns them for particular files the host
// decoder decodes (NVJPEG_STATUS_EXECUTION_FAILED: NVIDIA/DALI#3160,
// ImageNet's n01992773_7551 and n04591157_6031.JPEG; _INVALID_PARAMETER:
// DALI#3159 and #6026; _INTERNAL_ERROR: NVIDIA/nvImageCodec#55, region
// decodes of ordinary ImageNet JPEGs on some GPUs; DALI
// decodes such files on the host since PR #2805 and #3086). Such a file
// goes to the host decoder once nvJPEG is shown to still work
// (Impl::blame_files): a sticky CUDA error, or the same failure on a
// known-good JPEG, stops the run instead.
bool file_or_device_failure(nvjpegStatus_t s) {
  return s == NVJPEG_STATUS_EXECUTION_FAILED || s == NVJPEG_STATUS_INVALID_PARAMETER ||
         s == NVJPEG_STATUS_INTERNAL_ERROR;
}
// Any other failure (NVJPEG_STATUS_BAD_JPEG, _JPEG_NOT_SUPPORTED,
// _INCOMPLETE_BITSTREAM, _IMPLEMENTATION_NOT_SUPPORTED for an encoding the
// backend lacks, ...) is about the file: it goes to the host decoder, which
// decodes it or names it corrupt, so one odd file never stops a run that
// the host path would not stop.
bool refuses_file(nvjpegStatus_t s) {
  return s != NVJPEG_STATUS_SUCCESS && !device_failure(s) && !file_or_device_failure(s);
}

// nvJPEG's internal buffers grow to the largest image seen; padding every
// allocation to a multiple of 16 MiB spares most reallocations (and the
// device synchronisations they cost) on a mixed-size data set. DALI's
// nvJPEG decoder's default device_memory_padding and host_memory_padding.
constexpr size_t kNvjpegMemoryPadding = size_t(16) << 20;

// The per-file warnings of nvJPEG failures logged at most (the rest are counted).
constexpr int kFailureWarnings = 20;

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

// The CUDA stream of a CudaStreamHandle: nullptr is the op library's
// compute stream, which libraries get as the per-thread default stream by
// name (kernels/cuda/common.cuh).
cudaStream_t cuda_stream(CudaStreamHandle s) { return s ? static_cast<cudaStream_t>(s) : cudaStreamPerThread; }

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
  // Two decode states used in turn, each with an event recorded after its
  // last nvjpegDecodeBatched: the decode is asynchronous and reads the
  // state's buffers until it completes, so a state is initialised again
  // only after that event (as NVIDIA's nvImageCodec nvJPEG decoders do).
  // With two, the wait is for the decode before the previous one, which in
  // the steady state (one call per batch) has long completed.
  struct State {
    nvjpegJpegState_t state = nullptr;
    CudaEvent done;
  };
  std::array<State, 2> states;
  int next_state = 0;
  nvjpegJpegStream_t stream = nullptr;  // parsed headers for nvjpegDecodeBatchedSupported
  CudaStreamHandle queue = nullptr;     // the stream of the decode() in progress
  PinnedStaging staging;                // host-decoded images on their way up
  std::vector<uint8_t> reference;       // a known-good JPEG (blame_files), made when first needed
  int failures = 0;                     // files blamed so far (the first kFailureWarnings are logged)

  explicit Impl(int d) : device(d), staging(d) {}
  ~Impl() {
    if (stream) nvjpegJpegStreamDestroy(stream);
    for (State& st : states)
      if (st.state) nvjpegJpegStateDestroy(st.state);
    if (handle) nvjpegDestroy(handle);
  }

  // The host decoder, then an upload from page-locked staging (released
  // behind the call's work by decode()).
  void decode_on_host(const EncodedImage& e, DeviceImage* out) {
    try {
      const DecodedImage d = decode_image(e.data, e.size, e.name);
      out->width = d.rgb.cols;
      out->height = d.rgb.rows;
      out->rgb = cuda_empty_on({d.rgb.rows, d.rgb.cols, 3}, DType::U8, device, queue);
      const size_t row = static_cast<size_t>(d.rgb.cols) * 3, bytes = row * static_cast<size_t>(d.rgb.rows);
      uint8_t* pinned = static_cast<uint8_t*>(staging.acquire(bytes));
      for (int y = 0; y < d.rgb.rows; ++y) std::memcpy(pinned + row * static_cast<size_t>(y), d.rgb.ptr(y), row);
      check_cuda(cudaMemcpyAsync(out->rgb.data<uint8_t>(), pinned, bytes, cudaMemcpyHostToDevice, cuda_stream(queue)),
                 "DeviceJpegDecoder: upload of a host-decoded image");
      out->path = JpegDecodePath::Host;
      out->error = nullptr;
    } catch (const CorruptImage&) {
      out->rgb = Tensor();
      out->path = JpegDecodePath::Host;
      out->error = std::current_exception();
    }
  }

  // One nvjpegDecodeBatched call of n images on the next state, after that
  // state's previous decode completed; returns its status.
  nvjpegStatus_t run_batched(const unsigned char* const* data, const size_t* lengths, nvjpegImage_t* dst, int n) {
    State& st = states[static_cast<size_t>(next_state)];
    next_state ^= 1;
    st.done.synchronize();
    // Interleaved RGB into channel[0] (nvjpegOutputFormat_t NVJPEG_OUTPUT_RGBI).
    check(nvjpegDecodeBatchedInitialize(handle, st.state, n, 1, NVJPEG_OUTPUT_RGBI), "nvjpegDecodeBatchedInitialize");
    const nvjpegStatus_t s = nvjpegDecodeBatched(handle, st.state, data, lengths, dst, cuda_stream(queue));
    st.done.record(queue);  // also after a failure: the call may have queued work
    return s;
  }

  // `call` returned `s` (file_or_device_failure) for `files`. Returns (the
  // files are to blame: the caller splits the call or, for one file,
  // decodes it on the host) only while the device and nvJPEG still work:
  // no sticky CUDA error, and a known-good JPEG (64 x 48, baseline 4:2:0
  // from libjpeg-turbo, which every backend decodes) still decodes. Else
  // std::runtime_error naming the files, the status and what failed after.
  void blame_files(nvjpegStatus_t s, const char* call, const std::vector<const EncodedImage*>& files) {
    std::string names;
    for (size_t i = 0; i < files.size() && i < 8; ++i) names += (i ? ", " : "") + files[i]->name;
    if (files.size() > 8) names += ", and " + std::to_string(files.size() - 8) + " more";
    const std::string what = std::string(call) + " returned " + status_name(s) + " for " +
                             (files.size() == 1 ? names : "a call of " + std::to_string(files.size()) +
                                                              " images (" + names + ")");
    // A launch error of nvJPEG's own kernels for this file is cleared; a
    // sticky one (a lost device, an illegal address) fails every later call,
    // so the reference decode's synchronisation below reports it.
    const cudaError_t launch = cudaGetLastError();
    constexpr int W = 64, H = 48;
    if (reference.empty()) {
      std::vector<uint8_t> rgb(static_cast<size_t>(W) * H * 3);
      for (int y = 0; y < H; ++y)
        for (int x = 0; x < W; ++x)
          for (int c = 0; c < 3; ++c)
            rgb[(static_cast<size_t>(y) * W + x) * 3 + c] = static_cast<uint8_t>(x * 4 + y * c);
      reference = encode_jpeg_rgb(rgb.data(), W, H, 90, "the decoder's reference JPEG");
    }
    const Tensor scratch = cuda_empty_on({H, W, 3}, DType::U8, device, queue);
    nvjpegImage_t dst{};
    dst.channel[0] = scratch.data<uint8_t>();
    dst.pitch[0] = static_cast<size_t>(W) * 3;
    const unsigned char* data = reference.data();
    const size_t length = reference.size();
    std::string then;  // what failed after the file, if anything
    try {
      const nvjpegStatus_t r = run_batched(&data, &length, &dst, 1);
      const cudaError_t sync = cudaEventSynchronize(
          static_cast<cudaEvent_t>(states[static_cast<size_t>(next_state ^ 1)].done.handle()));
      if (r != NVJPEG_STATUS_SUCCESS)
        then = std::string("nvjpegDecodeBatched returns ") + status_name(r) +
               " for a known-good 64x48 baseline JPEG too";
      else if (sync != cudaSuccess)
        then = std::string("the device then fails: CUDA error: ") + cudaGetErrorString(sync);
    } catch (const std::runtime_error& e) {  // a CUDA call of the reference decode
      then = std::string("then ") + e.what();
    }
    if (!then.empty()) {
      if (launch != cudaSuccess) then += std::string(" (after the CUDA error ") + cudaGetErrorString(launch) + ")";
      throw std::runtime_error("DeviceJpegDecoder: " + what + ", and " + then +
                               ": the GPU or nvJPEG has failed, not the file; stopping");
    }
    if (files.size() == 1 && ++failures <= kFailureWarnings)
      log().warn("DeviceJpegDecoder: {}; nvJPEG still decodes a known-good JPEG, so the file is decoded on the "
                 "host{}",
                 what, failures == kFailureWarnings ? " (further such files are only counted)" : "");
  }

  void decode_batched(const std::vector<EncodedImage>& batch, const std::vector<size_t>& idx,
                      std::vector<DeviceImage>& out);

  // Whether nvJPEG takes this file (header read, components, hardware
  // support, an end-of-image marker); sets the size on success. A file
  // nvJPEG fails with a file_or_device_failure status is blamed (marked
  // nvjpeg_failed, false) or ends the run.
  bool nvjpeg_takes(const EncodedImage& e, DeviceImage* out) {
    if (sniff_format(e.data, e.size) != ImageFormat::Jpeg) return false;
    // A file cut short has no EOI marker at its end. The host decoder
    // appends one and refuses the file when its data runs out ("premature
    // end"), decodes it when only the EOI was missing; nvJPEG may pad the
    // missing data and decode it. Such files go to the host decoder, so the
    // device path skips, stops on or decodes them as the host path does.
    if (!ends_with_eoi(e.data, e.size)) return false;
    auto takes = [&](nvjpegStatus_t s, const char* call) {
      if (s == NVJPEG_STATUS_SUCCESS) return true;
      if (refuses_file(s)) return false;
      if (!file_or_device_failure(s)) check(s, call);
      blame_files(s, call, {&e});
      out->nvjpeg_failed = true;
      return false;
    };
    int comps = 0;
    nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
    int widths[NVJPEG_MAX_COMPONENT] = {}, heights[NVJPEG_MAX_COMPONENT] = {};
    if (!takes(nvjpegGetImageInfo(handle, e.data, e.size, &comps, &css, widths, heights), "nvjpegGetImageInfo"))
      return false;
    // 4 components: CMYK/YCCK, converted by the host decoder's convention.
    if ((comps != 1 && comps != 3) || css == NVJPEG_CSS_UNKNOWN || widths[0] <= 0 || heights[0] <= 0) return false;
    check_pixel_limit(widths[0], heights[0], e.name);  // the host path's limit, CorruptImage naming the file
    if (hardware) {
      // The header (up to the first scan) is all the supported check reads
      // (nvImageCodec's hardware decoder parses just that too); a full
      // nvjpegJpegStreamParse would walk every scan of the file.
      if (!takes(nvjpegJpegStreamParseHeader(handle, e.data, e.size, stream), "nvjpegJpegStreamParseHeader"))
        return false;
      int unsupported = 1;  // 0 means "supported" (nvJPEG docs, nvjpegDecodeBatchedSupported)
      if (!takes(nvjpegDecodeBatchedSupported(handle, stream, &unsupported), "nvjpegDecodeBatchedSupported"))
        return false;
      if (unsupported != 0) return false;
    }
    out->width = widths[0];
    out->height = heights[0];
    return true;
  }
};

DeviceJpegDecoder::DeviceJpegDecoder(int device, bool allow_hardware) : impl_(std::make_unique<Impl>(device)) {
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
  check(nvjpegSetDeviceMemoryPadding(kNvjpegMemoryPadding, impl_->handle), "nvjpegSetDeviceMemoryPadding");
  check(nvjpegSetPinnedMemoryPadding(kNvjpegMemoryPadding, impl_->handle), "nvjpegSetPinnedMemoryPadding");
  for (Impl::State& st : impl_->states) {
    check(nvjpegJpegStateCreate(impl_->handle, &st.state), "nvjpegJpegStateCreate");
    st.done = CudaEvent::create(device);
  }
  check(nvjpegJpegStreamCreate(impl_->handle, &impl_->stream), "nvjpegJpegStreamCreate");
}

DeviceJpegDecoder::~DeviceJpegDecoder() = default;

bool DeviceJpegDecoder::hardware() const { return impl_->hardware; }

std::vector<DeviceImage> DeviceJpegDecoder::decode(const std::vector<EncodedImage>& batch, CudaStreamHandle stream) {
  Impl& m = *impl_;
  check_cuda(cudaSetDevice(m.device), "DeviceJpegDecoder: cudaSetDevice");
  m.queue = stream;
  // The host-decoded images' staging is reused once this call's work on
  // the stream (their copies among it) has completed; also on an error.
  struct Release {
    Impl& m;
    ~Release() {
      try {
        m.staging.queued(m.queue);
      } catch (...) {  // a failed device: the error that ends the call says so
      }
    }
  } release{m};
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
    d.rgb = cuda_empty_on({d.height, d.width, 3}, DType::U8, m.device, stream);
    d.path = path;
  }
  m.decode_batched(batch, gpu, out);
  return out;
}

// One nvjpegDecodeBatched call for the images `idx` of `batch`. A call that
// refuses or fails a file does not say which one: the call is split in
// halves and each half decoded again, down to single files, which go to the
// host decoder (it decodes them or names them corrupt; a file failed with
// a file_or_device_failure status only after blame_files, at each level). One bad file in
// a batch of B costs about 2 log2(B) calls instead of B host decodes.
void DeviceJpegDecoder::Impl::decode_batched(const std::vector<EncodedImage>& batch, const std::vector<size_t>& idx,
                                            std::vector<DeviceImage>& out) {
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
  const nvjpegStatus_t s = run_batched(data.data(), lengths.data(), dst.data(), static_cast<int>(idx.size()));
  if (s == NVJPEG_STATUS_SUCCESS) return;
  if (device_failure(s)) check(s, "nvjpegDecodeBatched");
  if (file_or_device_failure(s)) {  // before any file is blamed (or the call split), nvJPEG must still work
    std::vector<const EncodedImage*> files;
    for (size_t i : idx) files.push_back(&batch[i]);
    blame_files(s, "nvjpegDecodeBatched", files);
  }
  if (idx.size() == 1) {
    out[idx[0]].nvjpeg_failed = file_or_device_failure(s);
    decode_on_host(batch[idx[0]], &out[idx[0]]);
    return;
  }
  const auto mid = idx.begin() + static_cast<std::ptrdiff_t>(idx.size() / 2);
  decode_batched(batch, std::vector<size_t>(idx.begin(), mid), out);
  decode_batched(batch, std::vector<size_t>(mid, idx.end()), out);
}

bool nvjpeg_header_takes(const uint8_t* data, size_t size, bool hardware) {
  if (sniff_format(data, size) != ImageFormat::Jpeg || !ends_with_eoi(data, size)) return false;
  int sof = -1, precision = 0, comps = 0, h[4] = {}, v[4] = {};
  size_t i = 2;  // after SOI
  while (i + 4 <= size) {
    if (data[i] != 0xFF) return true;  // not a marker where one must be: nvJPEG's header read decides
    const int m = data[i + 1];
    if (m == 0xFF) {  // fill byte
      ++i;
      continue;
    }
    if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // TEM, RSTn: no length
      i += 2;
      continue;
    }
    const size_t len = (static_cast<size_t>(data[i + 2]) << 8) | data[i + 3];
    if (len < 2 || i + 2 + len > size) return true;
    const uint8_t* p = data + i + 4;
    if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {  // SOFn (not DHT, JPG, DAC)
      // P, Y (2), X (2), Nf, then Nf x (C, H<<4 | V, Tq): ITU-T T.81 B.2.2.
      if (len < 8 || len < 8 + 3 * static_cast<size_t>(p[5])) return true;
      sof = m, precision = p[0], comps = p[5];
      for (int c = 0; c < comps && c < 4; ++c) h[c] = p[7 + 3 * c] >> 4, v[c] = p[7 + 3 * c] & 15;
    } else if (m == 0xDA) {  // SOS: Ns first (T.81 B.2.3)
      if (sof < 0 || len < 3) return true;
      if (comps != 1 && comps != 3) return false;  // CMYK / YCCK: the host decoder's convention
      if (precision != 8 || (sof != 0xC0 && sof != 0xC1 && sof != 0xC2)) return false;
      bool css411 = false;
      if (comps == 3) {
        if (h[1] != 1 || v[1] != 1 || h[2] != 1 || v[2] != 1) return false;
        const int y = h[0] * 10 + v[0];
        if (y != 11 && y != 21 && y != 22 && y != 12 && y != 41 && y != 42) return false;
        css411 = h[0] == 4;
      }
      if (hardware && (sof != 0xC0 || p[0] != comps || css411)) return false;
      return true;
    }
    i += 2 + len;
  }
  return true;
}

void rethrow_first_error(const std::vector<DeviceImage>& images) {
  for (const DeviceImage& d : images)
    if (d.error) std::rethrow_exception(d.error);
}

}  // namespace vt
