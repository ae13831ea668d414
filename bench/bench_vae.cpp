// AutoencoderKL encode and decode throughput on CPU (images/s).
//   bench_vae VAE_DIR IMAGE_DIR [N_IMAGES=4] [SIZE=256] [REPEATS=2]
// VAE_DIR: a diffusers AutoencoderKL folder (stabilityai/sd-vae-ft-ema, or
// random weights of its configuration from tools/vae_fixture.py --full DIR).
// The first N_IMAGES files of IMAGE_DIR (recursive, sorted) are ADM
// center-cropped to SIZE and mapped to [-1, 1] once; timed: one encode of the
// batch (posterior mean and logvar) and one decode of the means. The same
// protocol in PyTorch: tools/bench_vae_diffusers.py (which also runs this
// program and prints the ratio). Prints one JSON line (best of REPEATS after
// a warm-up call that creates the oneDNN primitives).
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "data_pipeline/decode.h"
#include "data_pipeline/image_folder.h"
#include "data_pipeline/transforms.h"
#include "vae/autoencoder_kl.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s VAE_DIR IMAGE_DIR [N_IMAGES] [SIZE] [REPEATS]\n", argv[0]);
    return 2;
  }
  const size_t n = argc > 3 ? std::atoll(argv[3]) : 4;
  const int size = argc > 4 ? std::atoi(argv[4]) : 256;
  const int repeats = argc > 5 ? std::atoi(argv[5]) : 2;
  const vt::AutoencoderKL vae = vt::AutoencoderKL::load(argv[1]);
  std::vector<std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(argv[2]))
    if (e.is_regular_file() && vt::has_image_extension(e.path().filename().string())) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  if (files.size() < n) {
    std::fprintf(stderr, "bench_vae: %zu images in %s, need %zu\n", files.size(), argv[2], n);
    return 2;
  }
  const int64_t plane = 3 * int64_t{size} * size;
  vt::Tensor images = vt::Tensor::empty({static_cast<int64_t>(n), 3, size, size});
  for (size_t i = 0; i < n; ++i) {
    const std::vector<uint8_t> bytes = vt::read_file_bytes(files[i]);
    const cv::Mat crop = vt::adm_center_crop(vt::decode_image(bytes.data(), bytes.size(), files[i]).rgb, size);
    vt::to_chw_normalized(crop, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}, images.f32() + i * plane);
  }
  // Best of `repeats` timed calls after one warm-up call.
  auto best = [&](const std::function<void()>& f) {
    f();
    double b = 1e30;
    for (int r = 0; r < std::max(1, repeats); ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      f();
      b = std::min(b, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    return b;
  };
  vt::AutoencoderKL::Posterior post;
  const double t_enc = best([&] { post = vae.encode(images); });
  vt::Tensor out;
  const double t_dec = best([&] { out = vae.decode(post.mean); });
  std::printf("{\"impl\": \"vtrain\", \"images\": %zu, \"size\": %d, \"threads\": %d, \"encode_img_s\": %.3f, "
              "\"decode_img_s\": %.3f, \"encode_s\": %.4f, \"decode_s\": %.4f}\n",
              n, size, omp_get_max_threads(), n / t_enc, n / t_dec, t_enc, t_dec);
  return 0;
}
