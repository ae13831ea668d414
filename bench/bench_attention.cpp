// Attention forward/backward throughput at DeiT-S and DiT-S/2-like shapes,
// and the memory-bound token ops (patchify, modulate, gate) in GB/s next to
// a memcpy of the same bytes. Prints one JSON object per line.
// On a GPU (CUDA builds with a device) it also times forward+backward of the
// three CUDA attention paths (kernels/cuda/attention.h) at DeiT-S (B=256,
// T=197, H=6, Dh=64) and DiT-L/4 (B=256, T=64, H=16, Dh=64) in bf16 (and the
// two own paths in fp32): the per-sample cuBLAS path with saved
// probabilities ("probs"), the own flash kernel ("flash") and cuDNN's fused
// SDPA ("cudnn", builds with VT_CUDNN_SDPA), with the ratios to "probs".
//
// Usage: bench_attention [iters]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "core/philox.h"
#include "core/tensor.h"
#include "kernels/attention.h"
#include "kernels/modulate.h"
#include "kernels/patch.h"
#ifdef VT_CUDA
#include <cuda_runtime.h>

#include "core/allocator.h"
#include "kernels/cuda/attention.h"
#ifdef VT_CUDNN_SDPA
#include "kernels/cuda/attention_cudnn.h"
#endif
#endif

using namespace vt;

namespace {

Tensor random_tensor(const Shape& shape) {
  Tensor t = Tensor::empty(shape);
  Philox rng(1, 2);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.normal());
  return t;
}

// Best-of-iters seconds (after one warm-up call).
double best_seconds(int iters, const std::function<void()>& fn) {
  fn();
  double best = 1e30;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

void bench_attention(const char* name, int64_t B, int64_t T, int64_t H, int64_t Dh, int iters) {
  const int64_t D = H * Dh;
  Tensor qkv = random_tensor({B, T, 3 * D}), out = Tensor::empty({B, T, D}), probs = Tensor::empty({B, H, T, T});
  Tensor dout = random_tensor({B, T, D}), dqkv = Tensor::empty({B, T, 3 * D});
  const double fwd = best_seconds(iters, [&] { attention_forward(qkv, H, out, probs); });
  const double bwd = best_seconds(iters, [&] { attention_backward(qkv, probs, dout, H, dqkv); });
  const double f_flops = 4.0 * B * H * T * T * Dh, b_flops = 8.0 * B * H * T * T * Dh;
  std::printf(
      "{\"bench\": \"attention\", \"shape\": \"%s\", \"B\": %ld, \"T\": %ld, \"H\": %ld, \"Dh\": %ld, "
      "\"fwd_ms\": %.3f, \"fwd_gflops\": %.1f, \"bwd_ms\": %.3f, \"bwd_gflops\": %.1f, \"saved_mib\": %.2f, "
      "\"threads\": %d}\n",
      name, (long)B, (long)T, (long)H, (long)Dh, fwd * 1e3, f_flops / fwd * 1e-9, bwd * 1e3, b_flops / bwd * 1e-9,
      attention_saved_bytes(B, T, H) / 1048576.0, omp_get_max_threads());
}

#ifdef VT_CUDA
// Best-of-iters milliseconds of fn on the GPU (after one warm-up call).
double gpu_best_ms(int iters, const std::function<void()>& fn) {
  fn();
  cudaDeviceSynchronize();
  double best = 1e30;
  for (int i = 0; i < iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    fn();
    cudaDeviceSynchronize();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3);
  }
  return best;
}

void bench_gpu_attention(const char* name, int64_t B, int64_t T, int64_t H, int64_t Dh, DType io, int iters) {
  const int64_t D = H * Dh;
  auto dev = [&](const Shape& s, DType dt) { return Tensor::empty(s, dt, Device::cuda(0)); };
  Tensor qkv = random_tensor({B, T, 3 * D}).to(io).to(Device::cuda(0));
  Tensor dout = random_tensor({B, T, D}).to(io).to(Device::cuda(0));
  Tensor out = dev({B, T, D}, io), dqkv = dev({B, T, 3 * D}, io), lse = dev({B, H, T}, DType::F32);
  double probs_ms = 0.0;
  {
    Tensor probs = dev({B, H, T, T}, io);
    probs_ms = gpu_best_ms(iters, [&] {
      cuda::attention_forward(qkv.raw(), out.raw(), probs.raw(), B, T, H, Dh, io);
      cuda::attention_backward(qkv.raw(), probs.raw(), dout.raw(), dqkv.raw(), B, T, H, Dh, io);
    });
  }
  const double flash_ms = gpu_best_ms(iters, [&] {
    cuda::flash_attention_forward(qkv.raw(), out.raw(), lse.f32(), B, T, H, Dh, io);
    cuda::flash_attention_backward(qkv.raw(), out.raw(), lse.f32(), dout.raw(), dqkv.raw(), B, T, H, Dh, io);
  });
  double cudnn_ms = -1.0;
#ifdef VT_CUDNN_SDPA
  if (io == DType::BF16 && cuda::cudnn_sdpa_supported(B, T, H, Dh))
    cudnn_ms = gpu_best_ms(iters, [&] {
      cuda::cudnn_sdpa_forward(qkv.raw(), out.raw(), lse.f32(), B, T, H, Dh);
      cuda::cudnn_sdpa_backward(qkv.raw(), out.raw(), lse.f32(), dout.raw(), dqkv.raw(), B, T, H, Dh);
    });
#endif
  // fwd 2 GEMMs + bwd 5 GEMMs of 2*B*H*T*T*Dh flops each (FlashAttention's count: 3.5x forward).
  const double flops = 7.0 * 2.0 * B * H * T * T * Dh;
  std::printf(
      "{\"bench\": \"attention_gpu\", \"shape\": \"%s\", \"dtype\": \"%s\", \"B\": %ld, \"T\": %ld, "
      "\"H\": %ld, \"Dh\": %ld, \"probs_fwdbwd_ms\": %.3f, \"flash_fwdbwd_ms\": %.3f, \"cudnn_fwdbwd_ms\": %.3f, "
      "\"flash_tflops\": %.1f, \"cudnn_tflops\": %.1f, \"probs_over_flash\": %.2f, \"probs_over_cudnn\": %.2f}\n",
      name, dtype_name(io), (long)B, (long)T, (long)H, (long)Dh, probs_ms, flash_ms, cudnn_ms,
      flops / flash_ms * 1e-9, cudnn_ms > 0 ? flops / cudnn_ms * 1e-9 : 0.0, probs_ms / flash_ms,
      cudnn_ms > 0 ? probs_ms / cudnn_ms : 0.0);
  std::fflush(stdout);
}
#endif

void report_bw(const char* op, double bytes, double secs, double memcpy_gbs) {
  std::printf("{\"bench\": \"%s\", \"gb_per_s\": %.2f, \"memcpy_gb_per_s\": %.2f, \"ratio\": %.2f}\n", op,
              bytes / secs * 1e-9, memcpy_gbs, bytes / secs * 1e-9 / memcpy_gbs);
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 5;
#ifdef VT_CUDA
  if (cuda_available()) {
    for (DType io : {DType::BF16, DType::F32}) {
      bench_gpu_attention("deit_s_b256", 256, 197, 6, 64, io, iters);
      bench_gpu_attention("dit_l4_b256", 256, 64, 16, 64, io, iters);
    }
  } else {
    std::printf("{\"bench\": \"attention_gpu\", \"skipped\": \"no CUDA device visible\"}\n");
  }
#endif
  bench_attention("deit_s_b32", 32, 197, 6, 64, iters);
  bench_attention("dit_s2_b32", 32, 256, 6, 64, iters);

  // Memory-bound ops on a [32, 256, 384] activation, against memcpy of the
  // same read+write bytes.
  const int64_t B = 32, T = 256, D = 384;
  Tensor x = random_tensor({B, T, D}), y = Tensor::empty({B, T, D});
  Tensor c = random_tensor({B, 6 * D});
  const double io = 2.0 * x.nbytes();
  const double mc = best_seconds(iters, [&] { std::memcpy(y.f32(), x.f32(), x.nbytes()); });
  const double memcpy_gbs = io / mc * 1e-9;
  report_bw("memcpy", io, mc, memcpy_gbs);
  report_bw("modulate_forward", io, best_seconds(iters, [&] { modulate_forward(x, c.slice(1, 0, D), c.slice(1, D, 2 * D), y); }),
            memcpy_gbs);
  report_bw("gate_forward", io, best_seconds(iters, [&] { gate_forward(x, c.slice(1, 2 * D, 3 * D), y); }), memcpy_gbs);
  Tensor img = random_tensor({B, 3, 224, 224}), pt = Tensor::empty({B, 196, 3 * 16 * 16});
  report_bw("patchify_p16", 2.0 * img.nbytes(), best_seconds(iters, [&] { patchify(img, 16, pt); }), memcpy_gbs);
  Tensor tok = random_tensor({B, 256, 2 * 2 * 8}), out = Tensor::empty({B, 8, 32, 32});
  report_bw("unpatchify_p2", 2.0 * tok.nbytes(), best_seconds(iters, [&] { unpatchify(tok, 2, out); }), memcpy_gbs);
  return 0;
}
