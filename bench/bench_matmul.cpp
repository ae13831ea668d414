// Matmul throughput (GFLOP/s) at the DeiT-S MLP shapes — 64 images x 197
// tokens = 12608 rows, D = 384, hidden 1536 — in the three GEMMs of a Linear
// layer (forward NT, dX NN, dW TN), the attention batched GEMMs, and the
// 4096^3 square GEMM as the library's reference figure in the same run.
// Prints one line per shape and a JSON line per shape for scripts.
// Usage: bench_matmul [min_seconds_per_shape (default 1.0)]
#include <omp.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "bench/bench_util.h"
#include "core/philox.h"
#include "core/tensor.h"
#include "kernels/matmul.h"

using namespace vt;

namespace {

Tensor random(const Shape& s, uint64_t stream) { return vt_bench::random_uniform(s, 7, stream, -0.5f, 0.5f); }

using vt_bench::best_seconds;

void report(const std::string& name, double flops, double secs, double ref_gflops) {
  const double gf = flops / secs * 1e-9;
  std::printf("%-44s %9.1f GFLOP/s  %8.3f ms", name.c_str(), gf, secs * 1e3);
  if (ref_gflops > 0) std::printf("  %5.2fx of 4096^3", gf / ref_gflops);
  std::printf("\n{\"bench\":\"matmul\",\"shape\":\"%s\",\"gflops\":%.2f,\"ms\":%.4f}\n", name.c_str(), gf, secs * 1e3);
}

}  // namespace

int main(int argc, char** argv) {
  const double min_s = argc > 1 ? std::atof(argv[1]) : 1.0;
  std::printf("threads: %d\n", omp_get_max_threads());

  const int64_t S = 4096;
  Tensor a = random({S, S}, 1), b = random({S, S}, 2), c = Tensor::empty({S, S});
  const double t_sq = best_seconds([&] { matmul(a, false, b, false, c); }, min_s);
  const double ref = 2.0 * S * S * S / t_sq * 1e-9;
  report("4096x4096x4096 NN", 2.0 * S * S * S, t_sq, 0);

  const int64_t M = 12608, D = 384, H = 1536;
  Tensor x = random({M, D}, 3), w = random({H, D}, 4), bias = random({H}, 5), y = Tensor::empty({M, H});
  Tensor wt = random({D, H}, 6);
  Tensor dy = random({M, H}, 7), dx = Tensor::empty({M, D}), dw = Tensor::zeros({H, D});
  const double fl = 2.0 * M * D * H;
  report("[12608x384] x [384x1536] NN", fl, best_seconds([&] { matmul(x, false, wt, false, y); }, min_s), ref);
  report("fc1 fwd [12608x384] x [1536x384]^T NT", fl,
         best_seconds([&] { matmul(x, false, w, true, y); }, min_s), ref);
  report("fc1 fwd + bias (linear_forward)", fl, best_seconds([&] { linear_forward(x, w, bias, y); }, min_s), ref);
  report("fc1 dX [12608x1536] x [1536x384] NN", fl,
         best_seconds([&] { matmul(dy, false, w, false, dx); }, min_s), ref);
  report("fc1 dW [12608x1536]^T x [12608x384] TN", fl,
         best_seconds([&] { matmul(dy, true, x, false, dw, 1.0f, 1.0f); }, min_s), ref);

  // Attention scores q k^T for 64 images x 6 heads, T = 197, Dh = 64, read
  // straight from the packed qkv [B, T, 3, H, Dh] layout.
  const int64_t B = 64, T = 197, NH = 6, Dh = 64;
  Tensor qkv = random({B, T, 3 * NH * Dh}, 8), scores = Tensor::empty({B, NH, T, T});
  const double fl_att = 2.0 * B * NH * T * T * Dh;
  const double t_att = best_seconds(
      [&] {
        for (int64_t bi = 0; bi < B; ++bi) {
          BatchedGemm g;
          g.batch = NH;
          g.m = T;
          g.n = T;
          g.k = Dh;
          g.trans_b = true;
          g.lda = g.ldb = 3 * NH * Dh;
          g.ldc = T;
          g.stride_a = g.stride_b = Dh;
          g.stride_c = T * T;
          Tensor q = qkv.select(0, bi).flatten(), kk = q.slice(0, NH * Dh, q.numel());
          matmul_strided_batched(q, kk, scores.select(0, bi).flatten(), g);
        }
      },
      min_s);
  report("attn q k^T 64 x 6 heads [197x64]x[64x197]", fl_att, t_att, ref);
  return 0;
}
