// GPU JPEG decoding for DeiT training input, for a machine with a GPU (a
// later scripts/gpu_check.sh `input` stage): images/s of nvJPEG batched
// decode + RandomResizedCrop on the device (data_pipeline/device/
// device_jpeg.h, device_rrc.h) against the host path (decode_image +
// resize_scaled_box, one thread = one core) over an image folder, in the
// same invocation, as one JSON line:
//   device_images_per_s   decode + crop + resize of every image, batches of
//                         `batch`, synchronised per batch (bytes read into
//                         memory beforehand, for both paths)
//   host_full_images_per_s, host_dct_images_per_s
//                         the host path at full size (the device path's
//                         arithmetic) and with data.dct_scaling (the
//                         trainer's cheaper default), per core
//   device_over_host_dct  the ratio; device_over_host_full likewise
//   paths                 images per decode path (nvjpeg-hardware,
//                         nvjpeg-cuda, host fallback)
//   max_abs_diff, mean_abs_diff
//                         device crop vs host full-size crop, uint8 levels:
//                         0 on the emulator; on a GPU nvJPEG's IDCT and
//                         upsampling are not libjpeg-turbo's (device_jpeg.h)
//   timed_cuda_mallocs    cudaMalloc calls of the caching allocator during
//                         the timed passes (0 in its steady state:
//                         core/allocator.h), and cache_segments,
//                         cache_reserved_mib: what it holds after them
//   resize_max_abs_diff   the device crop + resize of the host decoder's
//                         pixels (uploaded) vs the host's: must be 0 on any
//                         device (integer arithmetic, the same coefficients);
//                         checks the CUDA resize apart from nvJPEG
//   usage: bench_nvjpeg [root=<shared>/imagenet-samples] [batch=64] [size=224] [max_images=0 (all)] [passes=2]
// Exit status: 0 measured, 1 resize_max_abs_diff not 0, 2 bad usage or no
// GPU, 3 an error (e.g. a corrupt file).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/philox.h"
#include "data_pipeline/crop_decode.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/device/device_jpeg.h"
#include "data_pipeline/device/device_rrc.h"
#include "data_pipeline/image_folder.h"
#include "data_pipeline/transforms.h"

using namespace vt;

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The host path of one image: the same box draws, decode (full or DCT
// scaled), Pillow bicubic crop resize (dataset.cpp's DeiT train branch
// without flip and normalisation).
cv::Mat host_rrc(const std::vector<uint8_t>& b, const std::string& name, uint64_t i, int S, bool dct) {
  const ImageSize sz = probe_image(b.data(), b.size(), name);
  Philox rng(0, i);
  const CropBox box = rrc_box(sz.width, sz.height, rng);
  const DecodedImage d = decode_image(b.data(), b.size(), name, rrc_dct_scale(dct, box.width, box.height, S, S));
  return resize_scaled_box(d.rgb, 0, 0, d.full_width, d.full_height, d.rgb.cols, d.rgb.rows, box, S);
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = std::string(VT_SHARED_DATA_DIR) + "/imagenet-samples";
  int batch = 64, S = 224, max_images = 0, passes = 2;
  if (argc > 1) root = argv[1];
  if (argc > 2) batch = std::atoi(argv[2]);
  if (argc > 3) S = std::atoi(argv[3]);
  if (argc > 4) max_images = std::atoi(argv[4]);
  if (argc > 5) passes = std::atoi(argv[5]);
  if (argc > 6 || batch <= 0 || S <= 0 || max_images < 0 || passes <= 0) {
    std::fprintf(stderr, "usage: bench_nvjpeg [root] [batch>0] [size>0] [max_images>=0] [passes>0]\n");
    return 2;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "bench_nvjpeg: no CUDA device\n");
    return 2;
  }
  try {
    const ImageFolder folder(root);
    size_t n = folder.samples().size();
    if (max_images > 0) n = std::min(n, static_cast<size_t>(max_images));
    std::vector<std::vector<uint8_t>> bytes(n);
    std::vector<std::string> names(n);
    for (size_t i = 0; i < n; ++i) {
      names[i] = folder.samples()[i].path;
      bytes[i] = read_file_bytes(names[i]);
    }

    DeviceJpegDecoder dec(0);
    std::map<std::string, long> paths;
    std::vector<uint8_t> device_crops(n * S * S * 3);
    // One pass over all images in batches; with `keep`, the crops are
    // copied back (for the pixel comparison) and the paths counted.
    auto device_pass = [&](bool keep) {
      for (size_t s = 0; s < n; s += batch) {
        const size_t e = std::min(n, s + static_cast<size_t>(batch));
        std::vector<EncodedImage> enc;
        std::vector<CropBox> boxes;
        for (size_t i = s; i < e; ++i) {
          enc.push_back({bytes[i].data(), bytes[i].size(), names[i]});
          const ImageSize sz = probe_image(bytes[i].data(), bytes[i].size(), names[i]);
          Philox rng(0, i);
          boxes.push_back(rrc_box(sz.width, sz.height, rng));
        }
        const std::vector<DeviceImage> imgs = dec.decode(enc);
        const Tensor out = Tensor::empty({static_cast<int64_t>(e - s), S, S, 3}, DType::U8, Device::cuda(0));
        device_crop_resize_batch(imgs, boxes, S, out);
        if (cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess) throw std::runtime_error("stream sync failed");
        if (keep) {
          const Tensor h = out.to(Device::cpu());
          std::copy(h.data<uint8_t>(), h.data<uint8_t>() + h.numel(), device_crops.begin() + s * S * S * 3);
          for (const DeviceImage& d : imgs) ++paths[jpeg_decode_path_name(d.path)];
        }
      }
    };
    device_pass(true);  // warm-up (nvJPEG's buffers, the allocator) and the crops
    const size_t mallocs0 = cuda_malloc_calls();
    double t0 = now_s();
    for (int p = 0; p < passes; ++p) device_pass(false);
    const double device_s = (now_s() - t0) / passes;
    const CudaCacheStats cache = cuda_cache_stats();

    double diff_sum = 0, diff_max = 0;
    t0 = now_s();
    for (size_t i = 0; i < n; ++i) {
      const cv::Mat ref = host_rrc(bytes[i], names[i], i, S, false);
      const uint8_t* d = device_crops.data() + i * S * S * 3;
      for (int y = 0; y < S; ++y)
        for (int x = 0; x < S * 3; ++x) {
          const double a = std::abs(static_cast<double>(ref.ptr<uint8_t>(y)[x]) - d[y * S * 3 + x]);
          diff_sum += a;
          diff_max = std::max(diff_max, a);
        }
    }
    const double host_full_s = now_s() - t0;  // includes the comparison, well under the decode
    // The device resize alone, on the host decoder's pixels (untimed).
    double resize_diff = 0;
    for (size_t i = 0; i < n; ++i) {
      const ImageSize sz = probe_image(bytes[i].data(), bytes[i].size(), names[i]);
      Philox rng(0, i);
      const CropBox box = rrc_box(sz.width, sz.height, rng);
      const DecodedImage d = decode_image(bytes[i].data(), bytes[i].size(), names[i]);
      const cv::Mat full = d.rgb.isContinuous() ? d.rgb : d.rgb.clone();
      const Tensor up = Tensor::wrap(full.data, {full.rows, full.cols, 3}, DType::U8).to(Device::cuda(0));
      const Tensor out = Tensor::empty({S, S, 3}, DType::U8, Device::cuda(0));
      device_crop_resize(up, box, S, out);
      const Tensor h = out.to(Device::cpu());
      const cv::Mat ref = resize_scaled_box(full, 0, 0, full.cols, full.rows, full.cols, full.rows, box, S);
      for (int y = 0; y < S; ++y)
        for (int x = 0; x < S * 3; ++x)
          resize_diff = std::max(resize_diff, std::abs(static_cast<double>(ref.ptr<uint8_t>(y)[x]) -
                                                       h.data<uint8_t>()[y * S * 3 + x]));
    }
    t0 = now_s();
    for (size_t i = 0; i < n; ++i) host_rrc(bytes[i], names[i], i, S, true);
    const double host_dct_s = now_s() - t0;

    const double dev_ips = n / device_s, full_ips = n / host_full_s, dct_ips = n / host_dct_s;
    std::string p;
    for (const auto& [k, v] : paths) p += (p.empty() ? "" : ", ") + ("\"" + k + "\": " + std::to_string(v));
    std::printf(
        "{\"bench\": \"nvjpeg_rrc\", \"images\": %zu, \"batch\": %d, \"size\": %d, \"hardware_backend\": %s, "
        "\"device_images_per_s\": %.1f, \"host_full_images_per_s\": %.1f, \"host_dct_images_per_s\": %.1f, "
        "\"device_over_host_full\": %.2f, \"device_over_host_dct\": %.2f, \"paths\": {%s}, "
        "\"timed_cuda_mallocs\": %zu, \"cache_segments\": %zu, \"cache_reserved_mib\": %.1f, "
        "\"max_abs_diff\": %.0f, \"mean_abs_diff\": %.4f, \"resize_max_abs_diff\": %.0f}\n",
        n, batch, S, dec.hardware() ? "true" : "false", dev_ips, full_ips, dct_ips, dev_ips / full_ips,
        dev_ips / dct_ips, p.c_str(), cache.malloc_calls - mallocs0, cache.segments,
        cache.reserved_bytes / 1048576.0, diff_max, n ? diff_sum / (double(n) * S * S * 3) : 0.0, resize_diff);
    return resize_diff == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_nvjpeg: %s\n", e.what());
    return 3;
  }
}
