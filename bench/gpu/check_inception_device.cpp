// The FID Inception on a GPU against the CPU at full size, and its throughput
// on both, for a machine with a GPU (scripts/gpu_check.sh, stage `fid`).
// The network is pytorch-fid's topology with random weights (Philox; the
// BatchNorm statistics drawn so that activations stay O(1) through the 94
// units), the images random [0, 1] pixels already 299x299 (what veval's host
// side hands over after decoding and resizing). The CPU computes `check`
// images, the GPU all `images` in batches of `batch` (fp32, TF32 off); the
// features of the first `check` images are compared.
//   usage: check_inception_device [images=256] [batch=50] [check=8]
// Prints the relative max feature difference (max |gpu - cpu| / max |cpu|)
// and images/s of each device as one JSON line. In builds with cuDNN the
// GPU pass runs its convolutions through cuDNN (kernels/cuda/conv_cudnn.h)
// and is repeated with the hand-written kernel (set_conv_cudnn(false)):
// "own_conv_images_per_s", its own feature difference, and
// "cudnn_over_own" (images/s ratio, same invocation) say which conv path
// is faster for the whole network; both must agree with the CPU.
// "cudnn_calls" counts the cuDNN pass's convolutions by path: all should be
// "fused" (every unit is conv + bias + ReLU); "refused" ones ran the
// hand-written kernel because cuDNN offered no fp32 (FMA) algorithm.
// Then once more with TF32 tensor cores (veval --precision tf32,
// InceptionFid::set_tf32): "tf32_images_per_s", "tf32_rel_max_diff" (its
// features against the CPU's; reported, not judged) and the FID between the
// two halves of the images computed from fp32 and from TF32 features,
// "fid_halves_fp32" / "fid_halves_tf32" and their difference: how far TF32
// moves a score (random weights and pixels; the images / 2 per half, so
// the covariances are singular below 2048 images: a sensitivity figure, not
// an FID on data). Exit status: 0 agreement
// (< 1e-4, veval's parity bound with pytorch-fid), 1 beyond it, 2 bad usage
// or no GPU, 3 an error.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <string>

#include "core/allocator.h"
#include "core/philox.h"
#include "eval/frechet.h"
#include "eval/inception.h"
#include "kernels/conv.h"
#if defined(VT_CUDNN_CONV)
#include "kernels/cuda/conv_cudnn.h"
#endif
#include "kernels/matmul.h"

using namespace vt;

namespace {

std::map<std::string, Tensor> random_weights() {
  std::map<std::string, Tensor> sd;
  uint64_t stream = 0;
  for (const auto& [name, shape] : InceptionFid::state_dict_shapes(1)) {
    Tensor t = Tensor::empty(shape);
    Philox rng(7, ++stream);
    const bool conv = name.find(".conv.weight") != std::string::npos;
    const int64_t fan_in = conv ? shape[1] * shape[2] * shape[3] : 1;
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double n = rng.normal(0.0, 1.0);
      float v = 0.f;
      if (conv) v = static_cast<float>(n * std::sqrt(2.0 / static_cast<double>(fan_in)));  // He: ReLU keeps scale
      else if (name.find("running_var") != std::string::npos) v = static_cast<float>(1.0 + 0.1 * std::fabs(n));
      else if (name.find("bn.weight") != std::string::npos) v = static_cast<float>(1.0 + 0.1 * n);
      else v = static_cast<float>(0.1 * n);  // bias, running_mean
      t.f32()[i] = v;
    }
    sd[name] = t;
  }
  return sd;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t images = argc > 1 ? std::atoll(argv[1]) : 256, batch = argc > 2 ? std::atoll(argv[2]) : 50,
                check = argc > 3 ? std::atoll(argv[3]) : 8;
  if (images < 1 || batch < 1 || check < 1 || check > images) {
    std::fprintf(stderr, "usage: %s [images=256] [batch=50] [check=8 (<= images)]\n", argv[0]);
    return 2;
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "check_inception_device: no CUDA device visible\n");
    return 2;
  }
  try {
    const auto sd = random_weights();
    InceptionFid cpu(sd, "random"), gpu(sd, "random");
    set_matmul_tf32(false);
    gpu.to(Device::cuda(0));
    Tensor x = Tensor::empty({images, 3, 299, 299});
    Philox rng(11, 0);
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = static_cast<float>(rng.uniform());
    const int64_t D = cpu.feature_dim();

    auto t0 = std::chrono::steady_clock::now();
    Tensor fc = Tensor::empty({check, D});
    for (int64_t s = 0; s < check; s += batch) {
      const int64_t b = std::min(batch, check - s);
      cpu.features(x.slice(0, s, s + b), fc.slice(0, s, s + b));
    }
    const double cpu_s = seconds_since(t0);

    // The GPU pass over all images (warm-up batch first); seconds.
    auto gpu_pass = [&](Tensor& fg) {
      gpu.features(x.slice(0, 0, std::min(batch, images)), fg.slice(0, 0, std::min(batch, images)));  // warm-up
      const auto t = std::chrono::steady_clock::now();
      for (int64_t s = 0; s < images; s += batch) {
        const int64_t b = std::min(batch, images - s);
        gpu.features(x.slice(0, s, s + b), fg.slice(0, s, s + b));  // synchronous: features come back to the host
      }
      return seconds_since(t);
    };
    auto rel_diff = [&](const Tensor& fg, double* den) {
      double num = 0;
      *den = 0;
      for (int64_t i = 0; i < check * D; ++i) {
        num = std::max(num, std::fabs(static_cast<double>(fg.f32()[i]) - fc.f32()[i]));
        *den = std::max(*den, std::fabs(static_cast<double>(fc.f32()[i])));
      }
      return num / std::max(*den, 1e-30);
    };
    const bool cudnn = conv_uses_cudnn();
    Tensor fg = Tensor::empty({images, D});
#if defined(VT_CUDNN_CONV)
    const cuda::CudnnConvCounts c0 = cuda::cudnn_conv_counts();
#endif
    const double gpu_s = gpu_pass(fg);
    std::string calls = "";
#if defined(VT_CUDNN_CONV)
    const cuda::CudnnConvCounts c1 = cuda::cudnn_conv_counts();
    calls = ", \"cudnn_calls\": {\"fused\": " + std::to_string(c1.fused - c0.fused) +
            ", \"unfused\": " + std::to_string(c1.unfused - c0.unfused) +
            ", \"padded\": " + std::to_string(c1.padded - c0.padded) +
            ", \"packed_out\": " + std::to_string(c1.packed_out - c0.packed_out) +
            ", \"refused\": " + std::to_string(c1.refused - c0.refused) + "}";
#endif
    double den = 0;
    const double rel = rel_diff(fg, &den);
    bool ok = rel < 1e-4 && std::isfinite(rel) && den > 0;
    std::string own = "";
    if (cudnn) {  // the hand-written conv on the same images: the reference of the ratio
      set_conv_cudnn(false);
      Tensor fo = Tensor::empty({images, D});
      const double own_s = gpu_pass(fo);
      set_conv_cudnn(true);
      double den_o = 0;
      const double rel_o = rel_diff(fo, &den_o);
      ok = ok && rel_o < 1e-4 && std::isfinite(rel_o);
      char buf[200];
      std::snprintf(buf, sizeof buf, ", \"own_conv_images_per_s\": %.2f, \"own_conv_rel_max_diff\": %.3g, "
                    "\"cudnn_over_own\": %.2f", images / own_s, rel_o, own_s / gpu_s);
      own = buf;
    }
    own += calls;
#if defined(VT_CUDNN_CONV)
    if (cudnn && images >= 4) {
      gpu.set_tf32(true);
      Tensor ft = Tensor::empty({images, D});
      const double tf32_s = gpu_pass(ft);
      gpu.set_tf32(false);
      double den_t = 0;
      const double rel_t = rel_diff(ft, &den_t);
      // FID between the two halves, from each precision's features.
      auto fid_halves = [&](const Tensor& f) {
        const int64_t h = images / 2;
        StatsAccumulator a(D), b(D);
        a.add(f.f32(), h);
        b.add(f.f32() + h * D, images - h);
        return frechet_distance(a.finish(), b.finish()).fid;
      };
      const double fid32 = fid_halves(fg), fidt = fid_halves(ft);
      char buf[240];
      std::snprintf(buf, sizeof buf, ", \"tf32_images_per_s\": %.2f, \"tf32_rel_max_diff\": %.3g, "
                    "\"fid_halves_fp32\": %.6g, \"fid_halves_tf32\": %.6g, \"fid_tf32_minus_fp32\": %.3g",
                    images / tf32_s, rel_t, fid32, fidt, fidt - fid32);
      own += buf;
    }
#endif
    std::printf("{\"bench\": \"inception_fid_device\", \"conv\": \"%s\", \"images\": %lld, \"batch\": %lld, "
                "\"checked\": %lld, \"rel_max_diff\": %.3g, \"feature_max\": %.4g, \"cpu_images_per_s\": %.2f, "
                "\"cuda_images_per_s\": %.2f, \"speedup\": %.1f%s, \"verdict\": \"%s\"}\n",
                cudnn ? "cudnn" : "hand-written", static_cast<long long>(images), static_cast<long long>(batch),
                static_cast<long long>(check), rel, den, check / cpu_s, images / gpu_s,
                (images / gpu_s) / (check / cpu_s), own.c_str(), ok ? "agree" : "DIFFER");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_inception_device: %s\n", e.what());
    return 3;
  }
}
