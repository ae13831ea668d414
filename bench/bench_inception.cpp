// FID Inception feature extraction throughput on the CPU or a GPU (images/s).
//   bench_inception WEIGHTS.safetensors IMAGE_DIR [N_IMAGES=32] [BATCH=16] [REPEATS=2] [DEVICE=cpu]
// DEVICE: cpu, cuda or cuda:N (the network moved there once; each batch is
// uploaded after the host resize and its features downloaded, as veval does).
// WEIGHTS: a pytorch-fid state dict (tools/convert_inception.py, or random
// weights from tools/inception_fixture.py --full DIR). The first N_IMAGES
// files of IMAGE_DIR (recursive, sorted) are decoded once; the timed part is
// what pytorch-fid times in its loop: uint8 -> [0,1] -> bilinear 299 ->
// network -> 2048-d features, in batches. The same protocol in PyTorch:
// tools/bench_pytorch_fid.py. Prints one JSON line (best of REPEATS after a
// warm-up pass that creates the oneDNN primitives).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <omp.h>

#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "core/allocator.h"
#include "eval/inception.h"
#include "kernels/matmul.h"
#include "kernels/resize.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s WEIGHTS.safetensors IMAGE_DIR [N_IMAGES] [BATCH] [REPEATS] [cpu|cuda|cuda:N]\n",
                 argv[0]);
    return 2;
  }
  const size_t n = argc > 3 ? std::atoll(argv[3]) : 32;
  const int64_t batch = argc > 4 ? std::atoll(argv[4]) : 16;
  const int repeats = argc > 5 ? std::atoi(argv[5]) : 2;
  const std::string dev_name = argc > 6 ? argv[6] : "cpu";
  vt::Device dev = vt::Device::cpu();
  if (dev_name == "cuda" || dev_name.rfind("cuda:", 0) == 0) {
    dev = vt::Device::cuda(dev_name == "cuda" ? 0 : std::atoi(dev_name.c_str() + 5));
    if (dev.index >= vt::cuda_device_count()) {
      std::fprintf(stderr, "bench_inception: %s asked, %d CUDA device(s) visible\n", dev_name.c_str(),
                   vt::cuda_device_count());
      return 2;
    }
    vt::cuda_set_device(dev.index);
    vt::set_matmul_tf32(false);
  } else if (dev_name != "cpu") {
    std::fprintf(stderr, "bench_inception: DEVICE must be cpu, cuda or cuda:N, got '%s'\n", dev_name.c_str());
    return 2;
  }
  vt::InceptionFid net = vt::InceptionFid::load(argv[1]);
  if (!dev.is_cpu()) net.to(dev);

  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(argv[2]))
    if (e.is_regular_file() && vt::has_image_extension(e.path().filename().string())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  files.resize(std::min(files.size(), n));
  std::vector<vt::Tensor> images;  // U8 [1, H, W, 3]
  for (const auto& f : files) {
    std::vector<uint8_t> bytes = vt::read_file_bytes(f);
    cv::Mat rgb = vt::decode_image(bytes.data(), bytes.size(), f).rgb;
    vt::Tensor t = vt::Tensor::empty({1, rgb.rows, rgb.cols, 3}, vt::DType::U8);
    for (int y = 0; y < rgb.rows; ++y)
      std::copy(rgb.ptr<uint8_t>(y), rgb.ptr<uint8_t>(y) + rgb.cols * 3, t.u8() + int64_t(y) * rgb.cols * 3);
    images.push_back(t);
  }

  double best = 1e30;
  for (int r = 0; r <= repeats; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    for (size_t s = 0; s < images.size(); s += batch) {
      const int64_t b = std::min<int64_t>(batch, images.size() - s);
      vt::Tensor x = vt::Tensor::empty({b, 3, 299, 299});
      for (int64_t i = 0; i < b; ++i) vt::resize_bilinear(vt::u8_nhwc_to_unit_nchw(images[s + i]), x.slice(0, i, i + 1));
      vt::Tensor out = vt::Tensor::empty({b, net.feature_dim()});
      net.features(x, out);
    }
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r > 0) best = std::min(best, sec);
  }
  std::printf("{\"bench\": \"inception_fid_%s\", \"images\": %zu, \"batch\": %lld, \"threads\": %d, "
              "\"width_divisor\": %d, \"seconds\": %.3f, \"images_per_s\": %.2f}\n",
              dev.is_cpu() ? "cpu" : "cuda", images.size(), static_cast<long long>(batch), omp_get_max_threads(), net.width_divisor(), best,
              images.size() / best);
  return 0;
}
