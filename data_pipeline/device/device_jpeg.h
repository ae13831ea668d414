// Batched decoding of encoded images into device memory through nvJPEG
// (CUDA toolkit; docs.nvidia.com/cuda/nvjpeg), for GPU input pipelines.
// Built only when CMake finds nvjpeg.h and libnvjpeg (VT_NVJPEG,
// data_pipeline/device/CMakeLists.txt); on the CUDA emulator the nvJPEG
// calls are served by libjpeg-turbo (tests/cuda/emu/nvjpeg_emu.cpp).
//
// Backend: NVJPEG_BACKEND_HARDWARE (the JPEG decode engines of A100, A30,
// H100, H200; nvJPEG docs §1.4 "Hardware Acceleration") when nvjpegCreateEx
// accepts it and the caller allows it, else NVJPEG_BACKEND_DEFAULT (the CUDA
// backend: Huffman decoding on the CPU or GPU, IDCT and colour conversion
// on the GPU).
//
// Per image, the path is chosen and recorded (DeviceImage::path):
//  - nvJPEG, in one nvjpegDecodeBatched call for the batch, for JPEGs whose
//    header nvjpegGetImageInfo reads with 1 or 3 components and, on the
//    hardware backend, that nvjpegDecodeBatchedSupported accepts (the
//    engines decode baseline, single-scan JPEGs only, not 4:1:1 / 4:1:0:
//    nvjpeg.h, nvjpegBackend_t; progressive JPEGs therefore go to the host);
//  - the host decoder (data_pipeline/decode.h, decode_image at full size)
//    followed by an upload for everything else: non-JPEG files (sniffed
//    from the bytes, as the host path does), 4-component CMYK/YCCK JPEGs
//    (nvJPEG's CMYK conversion, nvjpegDecodeParamsSetAllowCMYK, is "a simple
//    subtractive scheme", not PIL's Adobe-inverted convention the host
//    decoder follows), JPEGs nvJPEG's header reading or batch decode refuses
//    (e.g. NVJPEG_STATUS_BAD_JPEG, _JPEG_NOT_SUPPORTED, _INCOMPLETE_BITSTREAM;
//    a refused batch call does not name the file, so the call is split in
//    halves and retried down to the single files it refuses), JPEGs nvJPEG
//    fails with NVJPEG_STATUS_EXECUTION_FAILED, _INVALID_PARAMETER or
//    _INTERNAL_ERROR while it still decodes a known-good JPEG (real nvJPEG
//    fails particular decodable files so: NVIDIA/DALI#3159, #3160, #6026,
//    nvImageCodec#55; DeviceImage::nvjpeg_failed; decode() below), and JPEGs
//    without an EOI marker at their end (the host decoder refuses those cut
//    short and decodes those missing only the EOI, where nvJPEG may pad
//    and decode a cut one; so the device path treats them as the host path).
//  A file the host decoder cannot decode either gets the host decoder's
//  CorruptImage naming the file in DeviceImage::error; nothing is dropped.
//
// Pixels: nvJPEG's IDCT, chroma upsampling and YCbCr->RGB conversion are
// not libjpeg-turbo's, so on a GPU the nvJPEG paths' pixels differ from
// the host decoder's by a few levels (not bit-identical; the host path is
// the reference, docs/gpu.md "GPU JPEG decoding"). The emulator's stand-in
// decodes with libjpeg-turbo, so there every path equals the host decoder
// bit for bit (tests/cuda/emu/nvjpeg/test_device_jpeg_emu.cpp).
// EXIF orientation is not applied (as the host decoder).
//
// Streams: all work of a decode() call is queued on the stream it is given
// (the batch uploader's upload stream, so that the JPEG engines and the
// copies overlap the step on the compute stream; nullptr: the compute
// stream), and the images' memory is that stream's (core/cuda_stream.h,
// cuda_empty_on): work on another stream that reads them must wait for an
// event recorded there after the call. The input bytes must stay valid
// until that work has completed (synchronise, or read the outputs).
// Host-decoded images go up through page-locked staging (core/
// pinned_staging.h), so no copy makes the host wait for the stream.
// nvJPEG may decode a damaged entropy-coded segment (with its EOI intact)
// without an error status where the host decoder refuses it; such an image
// then comes back decoded, not as an error.
// Not thread-safe: one decoder per thread (nvJPEG docs §1.3).
#pragma once
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/tensor.h"

namespace vt {

enum class JpegDecodePath { NvjpegHardware, NvjpegCuda, Host };
const char* jpeg_decode_path_name(JpegDecodePath p);  // "nvjpeg-hardware", "nvjpeg-cuda", "host"

struct EncodedImage {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string name;  // the file, named in errors
};

struct DeviceImage {
  Tensor rgb;  // U8 [H, W, 3] contiguous on the decoder's CUDA device (R, G, B); undefined when error is set
  int width = 0, height = 0;
  JpegDecodePath path = JpegDecodePath::Host;
  std::exception_ptr error;  // the host decoder's CorruptImage naming the file, or null
  // nvJPEG failed the file with NVJPEG_STATUS_EXECUTION_FAILED,
  // _INVALID_PARAMETER or _INTERNAL_ERROR, so the host decoded it (path Host).
  bool nvjpeg_failed = false;
};

class DeviceJpegDecoder {
 public:
  // `device`: a CUDA device index. allow_hardware = false forces the CUDA
  // backend. Throws std::runtime_error naming the nvJPEG call and status
  // when no backend can be created.
  explicit DeviceJpegDecoder(int device, bool allow_hardware = true);
  ~DeviceJpegDecoder();
  DeviceJpegDecoder(const DeviceJpegDecoder&) = delete;
  DeviceJpegDecoder& operator=(const DeviceJpegDecoder&) = delete;

  bool hardware() const;  // the hardware backend is in use

  // Decodes every image of `batch` (any size >= 0), one DeviceImage per
  // input in order. Corrupt files: DeviceImage::error (above). A file
  // nvJPEG fails with NVJPEG_STATUS_EXECUTION_FAILED, _INVALID_PARAMETER
  // or _INTERNAL_ERROR is decoded on the host (a warning names it, for the
  // first 20) once no sticky CUDA error is pending and nvJPEG decodes a
  // known-good 64x48 baseline JPEG; when either fails, the device or the
  // library has failed: std::runtime_error naming the file, its status and
  // the failure after it. Failures of the library or the device itself
  // (NVJPEG_STATUS_ALLOCATOR_FAILURE, _NOT_INITIALIZED, _ARCH_MISMATCH, a
  // CUDA error): std::runtime_error naming the call and status.
  // Each nvJPEG decode state is initialised again only after the decode
  // queued on it before has completed (an event; the decoder keeps two).
  std::vector<DeviceImage> decode(const std::vector<EncodedImage>& batch, CudaStreamHandle stream = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Rethrows the first DeviceImage::error (data.on_corrupt=error semantics).
void rethrow_first_error(const std::vector<DeviceImage>& images);

// Whether DeviceJpegDecoder hands this file to nvJPEG (true) or is sure to
// give it to its host decoder (false), read from the markers up to the
// first scan without nvJPEG, so any thread may ask (the loader's workers:
// LoaderConfig::device_decodes). False for what device_jpeg.h's path list
// sends to the host by kind: non-JPEG files, JPEGs without an EOI at their
// end, components other than 1 or 3, precision other than 8 bits, lossless,
// hierarchical and arithmetic-coded frames, chroma components sampled
// other than 1x1 or luma other than 4:4:4/4:2:2/4:2:0/4:4:0/4:1:1/4:1:0
// (nvJPEG's NVJPEG_CSS_UNKNOWN); on the hardware backend (`hardware`)
// also all but baseline (SOF0) single-scan JPEGs and 4:1:1 / 4:1:0
// (nvjpeg.h, nvjpegBackend_t). Markers it cannot read: true (nvJPEG's own
// header read then decides). A true file may still be refused or failed
// by nvJPEG, and then goes to the host decoder as before.
bool nvjpeg_header_takes(const uint8_t* data, size_t size, bool hardware);

}  // namespace vt
