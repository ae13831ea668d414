// The subset of nvJPEG (CUDA toolkit, nvjpeg.h) that data_pipeline/device/
// device_jpeg.cpp calls, served on the host by libjpeg-turbo's libjpeg API,
// so the CUDA emulator runs the device decoder's plumbing and fallbacks.
// "Device" memory is host memory in the emulator: images are written
// straight into the destinations, in the call.
//
// Decoding: libjpeg-turbo with its defaults (JDCT_ISLOW, fancy upsampling),
// the settings of the host decoder's tjDecompress2 (data_pipeline/decode.cpp),
// so the stand-in's pixels equal the host decoder's; the real nvJPEG's do
// not (its own IDCT and upsampling; device_jpeg.h).
//
// What it refuses, as the real library documents (nvJPEG documentation,
// docs.nvidia.com/cuda/nvjpeg, and nvjpeg.h's comments):
//  - NVJPEG_BACKEND_HARDWARE where the GPU has no JPEG engines (§1.4
//    "Hardware Acceleration": A100, A30, H100, ...): nvjpegCreateEx returns
//    NVJPEG_STATUS_ARCH_MISMATCH (vt_emu_nvjpeg_set_hardware_present);
//  - on the hardware backend, nvjpegDecodeBatchedSupported reports not
//    supported (non-zero) for anything but a baseline 8-bit Huffman JPEG
//    with one interleaved scan and 1 or 3 components, and for 4:1:1 / 4:1:0
//    subsampling (nvjpeg.h, nvjpegBackend_t: "supports baseline JPEG
//    bitstream with single scan. 410 and 411 sub-samplings are not
//    supported"); nvjpegDecodeBatched on such a batch returns
//    NVJPEG_STATUS_JPEG_NOT_SUPPORTED;
//  - 4-component (CMYK/YCCK) JPEGs without nvjpegDecodeParamsSetAllowCMYK
//    (§2.3 "nvjpegDecodeParamsSetAllowCMYK"; the batched API has no decode
//    params): NVJPEG_STATUS_JPEG_NOT_SUPPORTED;
//  - sample precision other than 8 bits, arithmetic coding, lossless (§1.1,
//    "8 bits per pixel", "Huffman bitstream decoding"): _JPEG_NOT_SUPPORTED;
//  - what libjpeg cannot parse or decode, including data that ends early
//    (libjpeg's warnings): NVJPEG_STATUS_BAD_JPEG;
//  - nvjpegDecodeBatched before nvjpegDecodeBatchedInitialize (§2.3
//    "nvjpegDecodeBatched": the initialization "is required prior to this
//    call"): NVJPEG_STATUS_INVALID_PARAMETER;
//  - nvjpegDecodeBatchedInitialize or nvjpegDecodeBatched on a decode state
//    whose previous decode is still queued on its stream: the state owns
//    the buffers that decode's queued device phase reads (nvJPEG docs,
//    "nvJPEG Opaque JPEG Decoding State Handle": it "stores intermediate
//    buffers and variables"; "Thread Safety": a state is instantiated per
//    thread), and the documentation gives no point at which a queued
//    decode releases them, so NVIDIA's nvImageCodec nvJPEG decoders wait
//    for an event recorded after the decode before they use the state
//    again. The library would silently corrupt the queued decode; the
//    stand-in refuses the call with
//    NVJPEG_STATUS_INVALID_PARAMETER, prints why and counts it
//    (VtEmuNvjpegCounts::states_reused_in_flight).
//
// Failures of chosen files (test knobs, read when a handle is created):
// the real library fails particular, otherwise decodable, files with
// statuses that also mean a device or library failure:
// NVJPEG_STATUS_EXECUTION_FAILED for ImageNet's n01990800/n01992773_7551
// and n04591157_6031.JPEG (NVIDIA/DALI#3160), _INVALID_PARAMETER for
// n00440218_1788, n02095050_6063 and n04200258_2670 (DALI#3159, where the
// host decoder decodes them) and for n03287733_3194 (DALI#6026),
// NVJPEG_STATUS_INTERNAL_ERROR for ordinary ImageNet JPEGs decoded by
// region on some GPUs (NVIDIA/nvImageCodec#55, a 0.9.0 regression); the hardware and device back ends fail files of
// unusual sampling that the host decodes (DALI PR #2805 and #3086 added
// host fallbacks for them).
//  - VT_EMU_NVJPEG_FAIL="<status>:<target>[,<status>:<target>...]", status
//    execution | invalid | internal, target the 16 hex digits of the
//    FNV-1a 64-bit hash of a file's bytes (vt_emu_nvjpeg_content_hash), or
//    %N for every file whose hash is 0 mod N: nvjpegDecodeBatched returns
//    that status for a call holding such a file (a batched call reports one
//    status for the call, not which file);
//  - VT_EMU_NVJPEG_FAIL_STICKY=1: the first such failure loses the device
//    for the handle: every later call of it (header reads, the supported
//    check, decodes of any file) returns NVJPEG_STATUS_EXECUTION_FAILED, as
//    a GPU does after a fault (a sticky error: CUDA Runtime API, "Error
//    Handling").
// A malformed value throws std::invalid_argument naming the variable and
// the value, from nvjpegCreateEx.
// Calls the module does not make (other output formats, custom allocators,
// flags, the *_DEVICE and lossless backends) are answered with
// NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: loud, never a silent guess.
#include "nvjpeg_emu.h"

#include <nvjpeg.h>

#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "emu_streams.h"

#include <jpeglib.h>

namespace {

bool hardware_present() {
  static int present = [] {
    const char* e = std::getenv("VT_EMU_NVJPEG_HARDWARE");
    return e && std::strcmp(e, "0") == 0 ? 0 : 1;
  }();
  return present != 0;
}
int g_hardware_override = -1;  // -1: the environment's choice
VtEmuNvjpegCounts g_counts;

struct ErrorMgr {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  bool warned = false;
};

void on_error(j_common_ptr c) { std::longjmp(reinterpret_cast<ErrorMgr*>(c->err)->jump, 1); }
void on_message(j_common_ptr c, int level) {
  if (level < 0) reinterpret_cast<ErrorMgr*>(c->err)->warned = true;  // corrupt or truncated data
}

// What the header says, read by libjpeg.
struct Header {
  int width = 0, height = 0, components = 0, precision = 0;
  bool progressive = false, arithmetic = false, interleaved = false;
  int h[4] = {}, v[4] = {};
  nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
};

nvjpegChromaSubsampling_t subsampling(const Header& hd) {
  if (hd.components == 1) return NVJPEG_CSS_GRAY;
  if (hd.components != 3 || hd.h[1] != 1 || hd.v[1] != 1 || hd.h[2] != 1 || hd.v[2] != 1) return NVJPEG_CSS_UNKNOWN;
  const int h = hd.h[0], v = hd.v[0];
  if (h == 1 && v == 1) return NVJPEG_CSS_444;
  if (h == 2 && v == 1) return NVJPEG_CSS_422;
  if (h == 2 && v == 2) return NVJPEG_CSS_420;
  if (h == 1 && v == 2) return NVJPEG_CSS_440;
  if (h == 4 && v == 1) return NVJPEG_CSS_411;
  if (h == 4 && v == 2) return NVJPEG_CSS_410;
  return NVJPEG_CSS_UNKNOWN;
}

// Reads the header; optionally decodes to interleaved RGB rows `pitch`
// bytes apart at `out`. Returns the nvJPEG status.
nvjpegStatus_t run_libjpeg(const unsigned char* data, size_t len, Header* hd, unsigned char* out, size_t pitch) {
  if (!data || len == 0) return NVJPEG_STATUS_INVALID_PARAMETER;
  jpeg_decompress_struct cinfo;
  ErrorMgr err;
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return NVJPEG_STATUS_BAD_JPEG;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(len));
  jpeg_read_header(&cinfo, TRUE);
  hd->width = static_cast<int>(cinfo.image_width);
  hd->height = static_cast<int>(cinfo.image_height);
  hd->components = cinfo.num_components;
  hd->precision = cinfo.data_precision;
  hd->progressive = cinfo.progressive_mode;
  hd->arithmetic = cinfo.arith_code;
  hd->interleaved = cinfo.comps_in_scan == cinfo.num_components;
  for (int c = 0; c < cinfo.num_components && c < 4; ++c) {
    hd->h[c] = cinfo.comp_info[c].h_samp_factor;
    hd->v[c] = cinfo.comp_info[c].v_samp_factor;
  }
  hd->css = subsampling(*hd);
  nvjpegStatus_t status = NVJPEG_STATUS_SUCCESS;
  if (hd->precision != 8 || hd->arithmetic) status = NVJPEG_STATUS_JPEG_NOT_SUPPORTED;
  if (status == NVJPEG_STATUS_SUCCESS && out) {
    if (hd->components != 1 && hd->components != 3) {
      status = NVJPEG_STATUS_JPEG_NOT_SUPPORTED;  // CMYK/YCCK: not without AllowCMYK
    } else {
      cinfo.out_color_space = JCS_RGB;  // grayscale replicated, as NVJPEG_OUTPUT_RGBI
      jpeg_start_decompress(&cinfo);
      while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = out + static_cast<size_t>(cinfo.output_scanline) * pitch;
        jpeg_read_scanlines(&cinfo, &row, 1);
      }
      jpeg_finish_decompress(&cinfo);
      if (err.warned) status = NVJPEG_STATUS_BAD_JPEG;
    }
  }
  jpeg_destroy_decompress(&cinfo);
  return status;
}

bool hardware_decodes(const Header& hd) {
  return hd.precision == 8 && !hd.arithmetic && !hd.progressive && hd.interleaved &&
         (hd.components == 1 || hd.components == 3) && hd.css != NVJPEG_CSS_UNKNOWN && hd.css != NVJPEG_CSS_411 &&
         hd.css != NVJPEG_CSS_410;
}

// One VT_EMU_NVJPEG_FAIL rule: a file whose content hash is `hash`, or,
// with every > 0, 0 mod `every`, fails with `status`.
struct FailRule {
  nvjpegStatus_t status = NVJPEG_STATUS_SUCCESS;
  uint64_t hash = 0, every = 0;
};

std::vector<FailRule> fail_rules() {
  std::vector<FailRule> rules;
  const char* env = std::getenv("VT_EMU_NVJPEG_FAIL");
  if (!env || !*env) return rules;
  const std::string all = env;
  auto bad = [&](const std::string& item, const std::string& why) {
    return std::invalid_argument("VT_EMU_NVJPEG_FAIL='" + all + "': '" + item + "': " + why);
  };
  size_t pos = 0;
  while (pos <= all.size()) {
    const size_t end = std::min(all.find(',', pos), all.size());
    const std::string item = all.substr(pos, end - pos);
    pos = end + 1;
    const size_t colon = item.find(':');
    if (colon == std::string::npos) throw bad(item, "expected <status>:<hash or %N>");
    const std::string kind = item.substr(0, colon), target = item.substr(colon + 1);
    FailRule r;
    if (kind == "execution") r.status = NVJPEG_STATUS_EXECUTION_FAILED;
    else if (kind == "invalid") r.status = NVJPEG_STATUS_INVALID_PARAMETER;
    else if (kind == "internal") r.status = NVJPEG_STATUS_INTERNAL_ERROR;
    else throw bad(item, "the status must be execution, invalid or internal");
    char* stop = nullptr;
    if (!target.empty() && target[0] == '%') {
      r.every = std::strtoull(target.c_str() + 1, &stop, 10);
      if (target.size() < 2 || *stop || r.every == 0) throw bad(item, "%N needs a positive integer N");
    } else {
      r.hash = std::strtoull(target.c_str(), &stop, 16);
      if (target.size() != 16 || *stop) throw bad(item, "the hash must be 16 hex digits");
    }
    rules.push_back(r);
  }
  return rules;
}

bool sticky_failures() {
  const char* e = std::getenv("VT_EMU_NVJPEG_FAIL_STICKY");
  if (!e || !*e || std::strcmp(e, "0") == 0) return false;
  if (std::strcmp(e, "1") == 0) return true;
  throw std::invalid_argument(std::string("VT_EMU_NVJPEG_FAIL_STICKY='") + e + "': expected 0 or 1");
}

size_t g_last_device_padding = 0, g_last_pinned_padding = 0;

}  // namespace

uint64_t vt_emu_nvjpeg_content_hash(const unsigned char* data, size_t length) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64 bits
  for (size_t i = 0; i < length; ++i) h = (h ^ data[i]) * 0x100000001b3ull;
  return h;
}

struct nvjpegHandle {
  bool hardware = false;
  std::vector<FailRule> fail;
  bool sticky = false;
  bool lost = false;  // a sticky failure happened: every later call fails
  size_t device_padding = 0, pinned_padding = 0;

  // The rule's status for this file, or success.
  nvjpegStatus_t injected(const unsigned char* data, size_t length) const {
    if (fail.empty() || !data) return NVJPEG_STATUS_SUCCESS;
    const uint64_t h = vt_emu_nvjpeg_content_hash(data, length);
    for (const FailRule& r : fail)
      if (r.every ? h % r.every == 0 : h == r.hash) return r.status;
    return NVJPEG_STATUS_SUCCESS;
  }
};
struct nvjpegJpegState {
  int batch_size = 0;
  nvjpegOutputFormat_t format = NVJPEG_OUTPUT_RGBI;
  // Decodes queued on this state whose device phase has not run yet
  // (decremented by the queued op on the device thread).
  std::shared_ptr<std::atomic<int>> in_flight = std::make_shared<std::atomic<int>>(0);
};

namespace {
// The in-flight rule (above): true (and the call refused) when `state`'s
// previous decode is still queued.
bool reused_in_flight(nvjpegJpegState_t state, const char* call) {
  if (state->in_flight->load() == 0) return false;
  ++g_counts.states_reused_in_flight;
  std::fprintf(stderr,
               "nvjpeg_emu: %s on a decode state whose previous nvjpegDecodeBatched is still queued on its stream "
               "(wait for an event recorded after it first): NVJPEG_STATUS_INVALID_PARAMETER\n",
               call);
  return true;
}
}  // namespace
struct nvjpegJpegStream {
  bool parsed = false;
  Header header;
};

void vt_emu_nvjpeg_set_hardware_present(bool present) { g_hardware_override = present ? 1 : 0; }
VtEmuNvjpegCounts vt_emu_nvjpeg_counts() { return g_counts; }
void vt_emu_nvjpeg_reset_counts() { g_counts = {}; }
void vt_emu_nvjpeg_last_paddings(size_t* device, size_t* pinned) {
  *device = g_last_device_padding;
  *pinned = g_last_pinned_padding;
}

nvjpegStatus_t nvjpegCreateEx(nvjpegBackend_t backend, nvjpegDevAllocator_t* dev_allocator,
                              nvjpegPinnedAllocator_t* pinned_allocator, unsigned int flags, nvjpegHandle_t* handle) {
  if (!handle) return NVJPEG_STATUS_INVALID_PARAMETER;
  if (dev_allocator || pinned_allocator || flags != NVJPEG_FLAGS_DEFAULT)
    return NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
  const bool present = g_hardware_override >= 0 ? g_hardware_override == 1 : hardware_present();
  bool hardware = false;
  switch (backend) {
    case NVJPEG_BACKEND_HARDWARE:
      if (!present) return NVJPEG_STATUS_ARCH_MISMATCH;
      hardware = true;
      break;
    case NVJPEG_BACKEND_DEFAULT:
    case NVJPEG_BACKEND_HYBRID:
    case NVJPEG_BACKEND_GPU_HYBRID:
      break;
    default:
      return NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
  }
  nvjpegHandle h;
  h.hardware = hardware;
  h.fail = fail_rules();
  h.sticky = sticky_failures();
  *handle = new nvjpegHandle(std::move(h));
  return NVJPEG_STATUS_SUCCESS;
}

// nvjpeg.h: "After success on this call any device [pinned host] memory
// allocation would be padded to the multiple of specified number of
// bytes"; the handle is the only argument that can be invalid.
nvjpegStatus_t nvjpegSetDeviceMemoryPadding(size_t padding, nvjpegHandle_t handle) {
  if (!handle) return NVJPEG_STATUS_INVALID_PARAMETER;
  handle->device_padding = g_last_device_padding = padding;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegSetPinnedMemoryPadding(size_t padding, nvjpegHandle_t handle) {
  if (!handle) return NVJPEG_STATUS_INVALID_PARAMETER;
  handle->pinned_padding = g_last_pinned_padding = padding;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegGetDeviceMemoryPadding(size_t* padding, nvjpegHandle_t handle) {
  if (!handle || !padding) return NVJPEG_STATUS_INVALID_PARAMETER;
  *padding = handle->device_padding;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegGetPinnedMemoryPadding(size_t* padding, nvjpegHandle_t handle) {
  if (!handle || !padding) return NVJPEG_STATUS_INVALID_PARAMETER;
  *padding = handle->pinned_padding;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegDestroy(nvjpegHandle_t handle) {
  delete handle;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegJpegStateCreate(nvjpegHandle_t handle, nvjpegJpegState_t* state) {
  if (!handle || !state) return NVJPEG_STATUS_INVALID_PARAMETER;
  *state = new nvjpegJpegState{};
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegJpegStateDestroy(nvjpegJpegState_t state) {
  delete state;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegJpegStreamCreate(nvjpegHandle_t handle, nvjpegJpegStream_t* stream) {
  if (!handle || !stream) return NVJPEG_STATUS_INVALID_PARAMETER;
  *stream = new nvjpegJpegStream{};
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegJpegStreamDestroy(nvjpegJpegStream_t stream) {
  delete stream;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegGetImageInfo(nvjpegHandle_t handle, const unsigned char* data, size_t length, int* nComponents,
                                  nvjpegChromaSubsampling_t* subsampling_out, int* widths, int* heights) {
  if (!handle || !nComponents || !subsampling_out || !widths || !heights) return NVJPEG_STATUS_INVALID_PARAMETER;
  if (handle->lost) return NVJPEG_STATUS_EXECUTION_FAILED;
  Header hd;
  const nvjpegStatus_t s = run_libjpeg(data, length, &hd, nullptr, 0);
  if (s != NVJPEG_STATUS_SUCCESS) return s;
  *nComponents = hd.components;
  *subsampling_out = hd.css;
  int hmax = 1, vmax = 1;
  for (int c = 0; c < hd.components && c < 4; ++c) {
    hmax = hd.h[c] > hmax ? hd.h[c] : hmax;
    vmax = hd.v[c] > vmax ? hd.v[c] : vmax;
  }
  // Per component (absent ones 0), as nvjpeg.h describes: ceil(W * h / hmax).
  for (int c = 0; c < NVJPEG_MAX_COMPONENT; ++c) {
    const bool present = c < hd.components;
    widths[c] = present ? (hd.width * hd.h[c] + hmax - 1) / hmax : 0;
    heights[c] = present ? (hd.height * hd.v[c] + vmax - 1) / vmax : 0;
  }
  return NVJPEG_STATUS_SUCCESS;
}

namespace {
nvjpegStatus_t parse(nvjpegHandle_t handle, const unsigned char* data, size_t length, nvjpegJpegStream_t stream) {
  if (!handle || !stream) return NVJPEG_STATUS_INVALID_PARAMETER;
  if (handle->lost) return NVJPEG_STATUS_EXECUTION_FAILED;
  stream->parsed = false;
  const nvjpegStatus_t s = run_libjpeg(data, length, &stream->header, nullptr, 0);
  if (s == NVJPEG_STATUS_BAD_JPEG) return s;  // a not-supported stream still parses; Supported says so
  stream->parsed = true;
  return NVJPEG_STATUS_SUCCESS;
}
}  // namespace

// The whole stream (the real library also walks every scan); here the
// header is all the supported check reads, so both parse the same.
nvjpegStatus_t nvjpegJpegStreamParse(nvjpegHandle_t handle, const unsigned char* data, size_t length,
                                     int save_metadata, int save_stream, nvjpegJpegStream_t stream) {
  ++g_counts.full_parses;
  return parse(handle, data, length, stream);
}

// Up to the first scan (nvjpeg.h); NVIDIA's nvImageCodec hardware decoder
// calls it before nvjpegDecodeBatchedSupportedEx.
nvjpegStatus_t nvjpegJpegStreamParseHeader(nvjpegHandle_t handle, const unsigned char* data, size_t length,
                                           nvjpegJpegStream_t stream) {
  ++g_counts.header_parses;
  return parse(handle, data, length, stream);
}

nvjpegStatus_t nvjpegDecodeBatchedSupported(nvjpegHandle_t handle, nvjpegJpegStream_t stream, int* is_supported) {
  if (!handle || !stream || !is_supported || !stream->parsed) return NVJPEG_STATUS_INVALID_PARAMETER;
  if (handle->lost) return NVJPEG_STATUS_EXECUTION_FAILED;
  const Header& hd = stream->header;
  const bool ok = handle->hardware ? hardware_decodes(hd)
                                   : hd.precision == 8 && !hd.arithmetic && (hd.components == 1 || hd.components == 3);
  *is_supported = ok ? 0 : 1;  // 0 means supported
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegDecodeBatchedInitialize(nvjpegHandle_t handle, nvjpegJpegState_t state, int batch_size,
                                             int max_cpu_threads, nvjpegOutputFormat_t output_format) {
  if (!handle || !state || batch_size <= 0 || max_cpu_threads <= 0) return NVJPEG_STATUS_INVALID_PARAMETER;
  if (output_format != NVJPEG_OUTPUT_RGBI) return NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
  if (reused_in_flight(state, "nvjpegDecodeBatchedInitialize")) return NVJPEG_STATUS_INVALID_PARAMETER;
  state->batch_size = batch_size;
  state->format = output_format;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegDecodeBatched(nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char* const* data,
                                   const size_t* lengths, nvjpegImage_t* destinations, cudaStream_t stream) {
  if (!handle || !state || !data || !lengths || !destinations || state->batch_size <= 0)
    return NVJPEG_STATUS_INVALID_PARAMETER;
  ++g_counts.batched_calls;
  g_counts.last_stream = stream;
  if (reused_in_flight(state, "nvjpegDecodeBatched")) {
    ++g_counts.failed_calls;
    return NVJPEG_STATUS_INVALID_PARAMETER;
  }
  if (handle->lost) {
    ++g_counts.failed_calls;
    return NVJPEG_STATUS_EXECUTION_FAILED;
  }
  for (int i = 0; i < state->batch_size; ++i) {
    const nvjpegStatus_t injected = handle->injected(data[i], lengths[i]);
    if (injected != NVJPEG_STATUS_SUCCESS) {
      ++g_counts.failed_calls;
      ++g_counts.injected_failures;
      handle->lost = handle->sticky;
      return injected;
    }
  }
  // The statuses come at the call (the host phase parses and Huffman-decodes
  // there); the pixels reach the destinations when the stream runs the
  // device phase, so the caller must order its reads after `stream`.
  struct Out {
    std::vector<unsigned char> pixels;
    unsigned char* dst;
    size_t pitch, row;
    int height;
  };
  auto outs = std::make_shared<std::vector<Out>>();
  for (int i = 0; i < state->batch_size; ++i) {
    Header hd;
    nvjpegStatus_t s = run_libjpeg(data[i], lengths[i], &hd, nullptr, 0);
    if (s == NVJPEG_STATUS_SUCCESS && handle->hardware && !hardware_decodes(hd)) s = NVJPEG_STATUS_JPEG_NOT_SUPPORTED;
    if (s == NVJPEG_STATUS_SUCCESS) {
      if (!destinations[i].channel[0] || destinations[i].pitch[0] < static_cast<size_t>(hd.width) * 3) {
        s = NVJPEG_STATUS_INVALID_PARAMETER;
      } else {
        const size_t row = static_cast<size_t>(hd.width) * 3;
        outs->push_back({std::vector<unsigned char>(row * static_cast<size_t>(hd.height)),
                         destinations[i].channel[0], destinations[i].pitch[0], row, hd.height});
        s = run_libjpeg(data[i], lengths[i], &hd, outs->back().pixels.data(), row);
      }
    }
    if (s != NVJPEG_STATUS_SUCCESS) {
      ++g_counts.failed_calls;
      return s;
    }
  }
  g_counts.batched_images += state->batch_size;
  state->in_flight->fetch_add(1);
  vt_emu::submit(stream, [outs, in_flight = state->in_flight] {
    for (const Out& o : *outs)
      for (int r = 0; r < o.height; ++r) std::memcpy(o.dst + r * o.pitch, o.pixels.data() + r * o.row, o.row);
    in_flight->fetch_sub(1);
  });
  return NVJPEG_STATUS_SUCCESS;
}
