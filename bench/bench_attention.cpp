// Attention forward/backward throughput at DeiT-S and DiT-S/2-like shapes,
// and the memory-bound token ops (patchify, modulate, gate) in GB/s next to
// a memcpy of the same bytes. Prints one JSON object per line.
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

void report_bw(const char* op, double bytes, double secs, double memcpy_gbs) {
  std::printf("{\"bench\": \"%s\", \"gb_per_s\": %.2f, \"memcpy_gb_per_s\": %.2f, \"ratio\": %.2f}\n", op,
              bytes / secs * 1e-9, memcpy_gbs, bytes / secs * 1e-9 / memcpy_gbs);
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 5;
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
