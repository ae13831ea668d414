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
//    call"): NVJPEG_STATUS_INVALID_PARAMETER.
// Calls the module does not make (other output formats, custom allocators,
// flags, the *_DEVICE and lossless backends) are answered with
// NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED: loud, never a silent guess.
#include "nvjpeg_emu.h"

#include <nvjpeg.h>

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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

}  // namespace

struct nvjpegHandle {
  bool hardware = false;
};
struct nvjpegJpegState {
  int batch_size = 0;
  nvjpegOutputFormat_t format = NVJPEG_OUTPUT_RGBI;
};
struct nvjpegJpegStream {
  bool parsed = false;
  Header header;
};

void vt_emu_nvjpeg_set_hardware_present(bool present) { g_hardware_override = present ? 1 : 0; }
VtEmuNvjpegCounts vt_emu_nvjpeg_counts() { return g_counts; }
void vt_emu_nvjpeg_reset_counts() { g_counts = {}; }

nvjpegStatus_t nvjpegCreateEx(nvjpegBackend_t backend, nvjpegDevAllocator_t* dev_allocator,
                              nvjpegPinnedAllocator_t* pinned_allocator, unsigned int flags, nvjpegHandle_t* handle) {
  if (!handle) return NVJPEG_STATUS_INVALID_PARAMETER;
  if (dev_allocator || pinned_allocator || flags != NVJPEG_FLAGS_DEFAULT)
    return NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
  const bool present = g_hardware_override >= 0 ? g_hardware_override == 1 : hardware_present();
  switch (backend) {
    case NVJPEG_BACKEND_HARDWARE:
      if (!present) return NVJPEG_STATUS_ARCH_MISMATCH;
      *handle = new nvjpegHandle{true};
      return NVJPEG_STATUS_SUCCESS;
    case NVJPEG_BACKEND_DEFAULT:
    case NVJPEG_BACKEND_HYBRID:
    case NVJPEG_BACKEND_GPU_HYBRID:
      *handle = new nvjpegHandle{false};
      return NVJPEG_STATUS_SUCCESS;
    default:
      return NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
  }
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

nvjpegStatus_t nvjpegJpegStreamParse(nvjpegHandle_t handle, const unsigned char* data, size_t length,
                                     int save_metadata, int save_stream, nvjpegJpegStream_t stream) {
  if (!handle || !stream) return NVJPEG_STATUS_INVALID_PARAMETER;
  stream->parsed = false;
  const nvjpegStatus_t s = run_libjpeg(data, length, &stream->header, nullptr, 0);
  if (s == NVJPEG_STATUS_BAD_JPEG) return s;  // a not-supported stream still parses; Supported says so
  stream->parsed = true;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegDecodeBatchedSupported(nvjpegHandle_t handle, nvjpegJpegStream_t stream, int* is_supported) {
  if (!handle || !stream || !is_supported || !stream->parsed) return NVJPEG_STATUS_INVALID_PARAMETER;
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
  state->batch_size = batch_size;
  state->format = output_format;
  return NVJPEG_STATUS_SUCCESS;
}

nvjpegStatus_t nvjpegDecodeBatched(nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char* const* data,
                                   const size_t* lengths, nvjpegImage_t* destinations, cudaStream_t stream) {
  if (!handle || !state || !data || !lengths || !destinations || state->batch_size <= 0)
    return NVJPEG_STATUS_INVALID_PARAMETER;
  ++g_counts.batched_calls;
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
  vt_emu::submit(stream, [outs] {
    for (const Out& o : *outs)
      for (int r = 0; r < o.height; ++r) std::memcpy(o.dst + r * o.pitch, o.pixels.data() + r * o.row, o.row);
  });
  return NVJPEG_STATUS_SUCCESS;
}
