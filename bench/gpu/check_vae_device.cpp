// check_vae_device: the DiT VAE (diffusers AutoencoderKL, sd-vae-ft-ema's
// structure: vae/autoencoder_kl.h) on a GPU against the CPU, its encode and
// decode images/s in each precision, and a projected FID-50K wall time for
// DiT-L/4 (scripts/gpu_check.sh, stage `vae`).
//
// The weights are random (Philox; convolutions He-scaled, GroupNorm affine
// near identity, so activations stay O(1) through the ~30 residual units);
// the images random pixels in [-1, 1], size x size. The CPU encodes and
// decodes the first `check` images (the reference); the GPU all `batch`,
// once per precision:
//   fp32  judged: posterior mean and decoded pixels within 1e-4 of the CPU
//         (max |gpu - cpu| / max |cpu|), the fp32 parity bound with diffusers;
//   tf32  (vae.precision's default on CUDA, DiT's sample.py) reported, not
//         judged: its difference is TF32's rounding.
//   bf16  (diffusers' vae.to(torch.bfloat16)) reported, not judged: its
//         difference is bf16's rounding (tests/cuda/emu/vae bound it).
// Timing: best of `repeats` calls after a warm-up call, each ending with the
// result copied to the host (what extraction and sampling do).
//
// Projection (DiT's FID-50K protocol: 250 DDPM steps, classifier-free
// guidance 1.5, so every model call runs 2 x dit_batch rows): DiT-L/4 with
// dittrain's default CUDA precision (bf16 GEMMs, fp32 master weights:
// train/device_choice.h) is timed over 3 respaced reverse steps of
// sample_images (diffusion/sampler.h) at dit_batch; then
//   sampling = 250 * ceil(50000 / dit_batch) * seconds per step
//   decode   = 50000 / tf32 decode images/s
// and their sum in minutes, without the Inception pass (stage `fid` prints
// its images/s: add 50000 / that).
//   usage: check_vae_device [batch=16] [size=256] [check=1] [dit_batch=256] [repeats=2] [model=DiT-L/4]
// (`model`: another DiT preset for the sampling steps; dit_batch=0 skips
// them and the projection, as the emulator's run of this program,
// emu.check_vae_device, does.) Prints one JSON line. Exit status: 0 agreement, 1 beyond it, 2 bad usage
// or no GPU, 3 an error.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/allocator.h"
#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "diffusion/sampler.h"
#include "kernels/matmul.h"
#include "train/device_choice.h"
#include "vae/autoencoder_kl.h"

using namespace vt;

namespace {

std::map<std::string, Tensor> random_vae_weights(const AutoencoderKLConfig& cfg) {
  std::map<std::string, Tensor> sd;
  uint64_t stream = 0;
  for (const auto& [name, shape] : AutoencoderKL::state_dict_shapes(cfg)) {
    Tensor t = Tensor::empty(shape);
    Philox rng(5, ++stream);
    const bool weight = name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0;
    const bool norm = name.find("norm") != std::string::npos;
    int64_t fan_in = 1;
    for (size_t d = 1; d < shape.size(); ++d) fan_in *= shape[d];
    for (int64_t i = 0; i < t.numel(); ++i) {
      const double n = rng.normal(0.0, 1.0);
      float v;
      if (weight && norm) v = static_cast<float>(1.0 + 0.1 * n);                       // GroupNorm scale
      else if (weight) v = static_cast<float>(n * std::sqrt(1.0 / static_cast<double>(fan_in)));  // conv / linear
      else v = static_cast<float>(0.02 * n);                                           // biases
      t.f32()[i] = v;
    }
    sd[name] = t;
  }
  return sd;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Best of `repeats` timed calls after one warm-up call.
double best_seconds(int repeats, const std::function<void()>& f) {
  f();
  double b = 1e30;
  for (int r = 0; r < std::max(1, repeats); ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    b = std::min(b, seconds_since(t0));
  }
  return b;
}

// max |got - want| / max |want| over the first rows of `got` that `want` holds.
double rel_max_diff(const Tensor& got, const Tensor& want) {
  const Tensor g = got.slice(0, 0, want.size(0)).to(Device::cpu()).contiguous(), w = want.contiguous();
  double num = 0, den = 0;
  for (int64_t i = 0; i < w.numel(); ++i) {
    num = std::max(num, std::fabs(static_cast<double>(g.f32()[i]) - w.f32()[i]));
    den = std::max(den, std::fabs(static_cast<double>(w.f32()[i])));
  }
  return den > 0 ? num / den : INFINITY;
}

int64_t arg(int argc, char** argv, int i, int64_t def) { return argc > i ? std::atoll(argv[i]) : def; }

}  // namespace

int main(int argc, char** argv) {
  const int64_t batch = arg(argc, argv, 1, 16), size = arg(argc, argv, 2, 256), check = arg(argc, argv, 3, 1),
                dit_batch = arg(argc, argv, 4, 256), repeats = arg(argc, argv, 5, 2);
  const std::string model_name = argc > 6 ? argv[6] : "DiT-L/4";
  if (batch < 1 || size < 8 || size % 8 != 0 || check < 1 || check > batch || dit_batch < 0 || repeats < 1) {
    std::fprintf(stderr, "usage: %s [batch=16] [size=256 (multiple of 8)] [check=1 (<= batch)] [dit_batch=256] "
                 "[repeats=2] [model=DiT-L/4]\n", argv[0]);
    return 2;
  }
  if (!cuda_available()) {
    std::fprintf(stderr, "check_vae_device: no CUDA device visible\n");
    return 2;
  }
  try {
    const AutoencoderKLConfig cfg;  // sd-vae-ft-ema / -mse
    AutoencoderKL vae(cfg, random_vae_weights(cfg), "random sd-vae-ft structure");
    Tensor x = Tensor::empty({batch, 3, size, size});
    Philox rng(13, 0);
    for (int64_t i = 0; i < x.numel(); ++i) x.f32()[i] = static_cast<float>(2.0 * rng.uniform() - 1.0);

    // CPU reference: the first `check` images.
    const Tensor xc = x.slice(0, 0, check).contiguous();
    auto t0 = std::chrono::steady_clock::now();
    const AutoencoderKL::Posterior pc = vae.encode(xc);
    const double cpu_enc_s = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    const Tensor ic = vae.decode(pc.mean);
    const double cpu_dec_s = seconds_since(t0);

    set_matmul_tf32(false);
    vae.to(Device::cuda(0));
    const Tensor xg = x.to(Device::cuda(0));
    std::string fields;
    bool ok = true;
    double tf32_decode_ips = 0;
    for (const VaePrecision p : {VaePrecision::Fp32, VaePrecision::Tf32, VaePrecision::Bf16}) {
      vae.set_precision(p);
      AutoencoderKL::Posterior pg;
      const double enc_s = best_seconds(static_cast<int>(repeats), [&] {
        pg = vae.encode(xg);
        pg.mean = pg.mean.to(Device::cpu());
      });
      Tensor ig;
      const Tensor z = pg.mean.to(Device::cuda(0));
      const double dec_s = best_seconds(static_cast<int>(repeats), [&] { ig = vae.decode(z).to(Device::cpu()); });
      const double e_enc = rel_max_diff(pg.mean, pc.mean), e_dec = rel_max_diff(ig, ic);
      const char* name = vae_precision_name(p);
      if (p == VaePrecision::Fp32) ok = e_enc < 1e-4 && e_dec < 1e-4;
      else if (p == VaePrecision::Tf32) tf32_decode_ips = batch / dec_s;
      char buf[400];
      std::snprintf(buf, sizeof buf,
                    ", \"%s\": {\"encode_images_per_s\": %.2f, \"decode_images_per_s\": %.2f, "
                    "\"encode_rel_max_diff\": %.3g, \"decode_rel_max_diff\": %.3g}",
                    name, batch / enc_s, batch / dec_s, e_enc, e_dec);
      fields += buf;
    }

    // DiT sampling steps at dittrain's default CUDA precision (bf16), and the projection.
    std::string sampling = ", \"sampling\": null, \"fid50k_projection\": null";
    if (dit_batch > 0) {
      const DeviceChoice dc = choose_device("cuda", "auto", "device", "precision");
      apply_device_choice(dc);
      DiT model(dit_preset(model_name));
      model.to(dc.device);
      if (dc.bf16()) model.params().enable_bf16_copy();
      SampleOptions so;
      so.cfg_scale = 1.5;
      so.guided_channels = 3;
      so.batch = static_cast<int>(dit_batch);
      std::vector<int32_t> labels(static_cast<size_t>(dit_batch));
      for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % 1000);
      so.steps = 1;
      sample_images(model, so, labels);  // warm-up: kernels, cuBLAS handles, the allocator's cache
      so.steps = 3;
      t0 = std::chrono::steady_clock::now();
      sample_images(model, so, labels);
      const double step_s = seconds_since(t0) / so.steps;
      const double n = 50000, calls = std::ceil(n / static_cast<double>(dit_batch));
      const double sampling_s = 250 * calls * step_s, decode_s = n / tf32_decode_ips;
      char buf[500];
      std::snprintf(buf, sizeof buf,
                    ", \"sampling\": {\"model\": \"%s\", \"precision\": \"%s\", \"batch\": %lld, \"cfg_scale\": 1.5, "
                    "\"seconds_per_step\": %.4f}, \"fid50k_projection\": {\"sampling_min\": %.1f, \"decode_min\": %.1f, "
                    "\"total_min_without_inception\": %.1f}",
                    model_name.c_str(), precision_name(dc.precision), static_cast<long long>(dit_batch), step_s,
                    sampling_s / 60, decode_s / 60, (sampling_s + decode_s) / 60);
      sampling = buf;
    }

    std::printf("{\"bench\": \"vae_device\", \"structure\": \"sd-vae-ft (random weights)\", \"size\": %lld, "
                "\"batch\": %lld, \"checked\": %lld, \"cpu\": {\"encode_images_per_s\": %.3f, "
                "\"decode_images_per_s\": %.3f}%s%s, \"verdict\": \"%s\"}\n",
                static_cast<long long>(size), static_cast<long long>(batch), static_cast<long long>(check),
                check / cpu_enc_s, check / cpu_dec_s, fields.c_str(), sampling.c_str(), ok ? "agree" : "DIFFER");
    return ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "check_vae_device: %s\n", e.what());
    return 3;
  }
}
