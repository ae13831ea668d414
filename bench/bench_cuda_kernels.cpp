// Bandwidth of the CUDA LayerNorm and fused SiameseNorm kernels and of the
// column sum behind every parameter gradient against cudaMemcpy
// device-to-device moving the same bytes, measured in the same invocation,
// at shapes larger than the L2 cache (docs/performance.md):
// DeiT-S at batch 256 (rows 256*197, D 384: 77 MB per fp32 tensor) and
// DiT-L/4 at batch 256 (rows 256*64, D 1024: 67 MB per fp32 tensor) and
// DiT-XL/2 at batch 64 (rows 64*256, D 1152: 75 MB per fp32 tensor; two warps
// per row), fp32 and bf16 streams. Target: ratio >= 0.80 for the forward row
// kernels.
//
// siamese_res_input_fwd is sublayer k's residual fused with sublayer k+1's
// input map (one kernel: reads u, f, y; writes x, y, u, z); the line
// "fused_vs_separate" after it gives its time against the residual kernel
// followed by the input kernel on the same tensors (speedup > 1: fused faster;
// the minimum traffic falls from 9 to 7 row tensors, 1.29x).
//
// column_sum is a bias gradient (kernels/cuda/matmul.h bias_backward: per
// 64-row chunk partials, then add_chunk_sums); the line
// "column_sum_second_stage" after it times add_chunk_sums alone on the same
// number of chunks and gives its share of the whole column sum (about 25
// column sums of this kind run in a DeiT-S step).
//
// "bytes" is the minimum traffic of each kernel: every row tensor read once
// plus every row tensor written once (statistics, parameters and parameter
// gradients are small and not counted; backward kernels that also produce
// parameter gradients re-read their inputs, so their effective GB/s is a
// lower bound of the real traffic). The copy moves the same bytes (reads
// bytes/2, writes bytes/2). ratio = kernel GB/s / copy GB/s (1.0 = as fast as
// a copy). Times: median of `iters` runs after 3 warm-ups, cudaEvent timed;
// before every run (untimed) a buffer of twice the L2 size is overwritten, so
// kernel and copy both start from a cold L2.
//   usage: bench_cuda_kernels [iters=20]
// Prints one machine-readable line per kernel, shape and dtype.
#include <cstdio>
#include <cstdlib>

#ifndef VT_CUDA
int main() {
  std::printf("bench_cuda_kernels: built without CUDA\n");
  return 0;
}
#else
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench/cuda_timing.h"
#include "core/allocator.h"
#include "core/tensor.h"
#include "kernels/cuda/layernorm.h"
#include "kernels/cuda/matmul.h"
#include "kernels/cuda/siamese.h"

using namespace vt;

namespace {

const auto ck = vt_bench::cuda_check;

// Overwritten before each timed run to evict the previous run's data from L2.
void* g_flush = nullptr;
size_t g_flush_bytes = 0;

void flush_l2() {
  if (g_flush) ck(cudaMemsetAsync(g_flush, 0, g_flush_bytes), "flush");
}

// Median milliseconds of f over iters runs, each from a cold L2.
double time_ms(int iters, const std::function<void()>& f) {
  return vt_bench::median_event_ms(iters, f, flush_l2);
}

// Values in [-1, 1) from a multiplicative hash (speed does not depend on
// them; a Philox normal per element would dominate the run at these sizes).
Tensor rand_dev(int64_t rows, int64_t d, DType dt, uint64_t stream) {
  Tensor h = Tensor::empty({rows, d});
  float* p = h.f32();
  for (int64_t i = 0; i < h.numel(); ++i) {
    const uint32_t k = static_cast<uint32_t>(i) * 2654435761u + static_cast<uint32_t>(stream) * 40503u;
    p[i] = static_cast<float>(k >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
  return h.to(dt).to(Device::cuda(0));
}

struct Shape2 {
  const char* name;
  int64_t rows, d, rows_per_sample;
  bool dit;
};

void report(const char* kernel, const Shape2& s, DType dt, double bytes, double ms, int iters) {
  // The copy of the same traffic: bytes/2 read and bytes/2 written.
  const size_t half = static_cast<size_t>(bytes / 2);
  void *src = nullptr, *dst = nullptr;
  ck(cudaMalloc(&src, half), "cudaMalloc");
  ck(cudaMalloc(&dst, half), "cudaMalloc");
  const double copy_ms = time_ms(iters, [&] { ck(cudaMemcpyAsync(dst, src, half, cudaMemcpyDeviceToDevice), "copy"); });
  cudaFree(src);
  cudaFree(dst);
  const double gbs = bytes / (ms * 1e6), copy_gbs = bytes / (copy_ms * 1e6);
  std::printf("kernel=%-24s shape=%-6s rows=%-6lld d=%-5lld dtype=%-4s MB=%8.2f us=%9.2f GBps=%8.1f copy_GBps=%8.1f ratio=%.3f\n",
              kernel, s.name, static_cast<long long>(s.rows), static_cast<long long>(s.d), dtype_name(dt),
              bytes / 1e6, ms * 1e3, gbs, copy_gbs, gbs / copy_gbs);
  std::fflush(stdout);
}

void bench_shape(const Shape2& s, DType dt, int iters) {
  const int64_t R = s.rows, D = s.d, B = R / s.rows_per_sample;
  const double row_bytes = static_cast<double>(R * D) * dtype_size(dt);
  const Device dev = Device::cuda(0);
  Tensor x = rand_dev(R, D, dt, 1), y = rand_dev(R, D, dt, 2), u = rand_dev(R, D, dt, 3),
         z = rand_dev(R, D, dt, 4), dz = rand_dev(R, D, dt, 5), du = rand_dev(R, D, dt, 6),
         dx = rand_dev(R, D, dt, 7), dy = rand_dev(R, D, dt, 8), mod = rand_dev(B, 6 * D, dt, 9),
         f = rand_dev(R, D, dt, 10);
  Tensor w = Tensor::full({D}, 1.0f, dev), b = Tensor::zeros({D}, DType::F32, dev);
  Tensor gw = Tensor::zeros({6, D}, DType::F32, dev);
  Tensor mean = Tensor::zeros({3, R}, DType::F32, dev), rstd = Tensor::full({3, R}, 1.0f, dev);
  Tensor drop = Tensor::full({B}, 1.0f, dev);
  auto at = [&](const Tensor& t, int64_t e) {
    return static_cast<void*>(static_cast<char*>(t.raw()) + e * static_cast<int64_t>(dtype_size(t.dtype())));
  };

  // LayerNorm (affine): forward reads x, writes y; backward reads dy, x, writes dx.
  report("layernorm_fwd", s, dt, 2 * row_bytes,
         time_ms(iters, [&] { cuda::layernorm_forward(x.raw(), w.f32(), b.f32(), 1e-6f, R, D, z.raw(), mean.f32(), rstd.f32(), dt); }),
         iters);
  report("layernorm_bwd", s, dt, 3 * row_bytes, time_ms(iters, [&] {
           cuda::layernorm_backward(dz.raw(), x.raw(), w.f32(), mean.f32(), rstd.f32(), R, D, dx.raw(), false,
                                    gw.f32(), gw.f32() + D, dt);
         }),
         iters);

  // Column sum (a bias gradient): reads dy once; then its second stage alone.
  const int64_t chunks = (R + 63) / 64;
  Tensor colsum = Tensor::zeros({D}, DType::F32, dev), partial = rand_dev(chunks, D, DType::F32, 11);
  const double t_colsum = time_ms(iters, [&] { cuda::bias_backward(dy.raw(), R, D, D, colsum.f32(), dt); });
  report("column_sum", s, dt, row_bytes, t_colsum, iters);
  const double t_second = time_ms(iters, [&] { cuda::add_chunk_sums(colsum.f32(), partial.f32(), chunks, D); });
  std::printf("column_sum_second_stage shape=%-6s dtype=%-4s chunks=%lld d=%lld us=%9.2f share=%.3f\n", s.name,
              dtype_name(dt), static_cast<long long>(chunks), static_cast<long long>(D), t_second * 1e3,
              t_second / t_colsum);

  // Siamese input: DeiT (3 affine norms) or DiT (affine post/pre, plain
  // input norm, modulate). Forward reads x, y; writes u, z.
  cuda::SiameseInputArgs a;
  a.rows = R, a.d = D, a.io = dt, a.act = dt, a.x = x.raw(), a.y = y.raw(), a.rows_per_sample = s.rows_per_sample;
  a.post = {true, w.f32(), b.f32()};
  a.pre = {true, w.f32(), b.f32()};
  a.input = s.dit ? cuda::SiameseNormArgs{true, nullptr, nullptr} : cuda::SiameseNormArgs{true, w.f32(), b.f32()};
  if (s.dit) a.shift = at(mod, 0), a.scale = at(mod, D), a.mod_ld = 6 * D;
  report("siamese_input_fwd", s, dt, 4 * row_bytes,
         time_ms(iters, [&] { cuda::siamese_input_forward(a, u.raw(), z.raw(), mean.f32(), rstd.f32(), false); }),
         iters);
  // Backward: reads x, y, dz, du, dy_pass; writes dx, dy (+ parameter grads).
  cuda::SiameseInputGradArgs g;
  g.dz = dz.raw(), g.du = du.raw(), g.dy_pass = u.raw(), g.dx = dx.raw(), g.dy = dy.raw();
  report("siamese_input_bwd_act", s, dt, 7 * row_bytes,
         time_ms(iters, [&] { cuda::siamese_input_backward(a, mean.f32(), rstd.f32(), g); }), iters);
  g.post_dw = gw.f32(), g.post_db = gw.f32() + D, g.pre_dw = gw.f32() + 2 * D, g.pre_db = gw.f32() + 3 * D;
  if (!s.dit) g.in_dw = gw.f32() + 4 * D, g.in_db = gw.f32() + 5 * D;
  if (s.dit) g.dshift = at(mod, 3 * D), g.dscale = at(mod, 4 * D);
  report("siamese_input_bwd_full", s, dt, 7 * row_bytes,
         time_ms(iters, [&] { cuda::siamese_input_backward(a, mean.f32(), rstd.f32(), g); }), iters);

  // Residual: forward reads u, f, y; writes x, y. Backward reads dx_out,
  // dy_out (and f for dgate); writes df.
  cuda::SiameseResidualArgs r;
  r.rows = R, r.d = D, r.io = dt, r.act = dt, r.u = u.raw(), r.f = z.raw(), r.y = y.raw(), r.drop_scale = drop.f32();
  r.rows_per_sample = s.rows_per_sample, r.inv_c = 0.5f;
  if (s.dit) r.gate = at(mod, 2 * D), r.gate_ld = 6 * D;
  report("siamese_residual_fwd", s, dt, 5 * row_bytes,
         time_ms(iters, [&] { cuda::siamese_residual_forward(r, x.raw(), y.raw()); }), iters);

  // Fused residual + next input against the two kernels, as Block::forward
  // runs them (u updated in place, x and y written then read by the input).
  cuda::SiameseResidualArgs rf = r;
  rf.f = f.raw();
  cuda::SiameseInputArgs an = a;
  an.x = x.raw(), an.y = y.raw();
  const double t_fused = time_ms(iters, [&] {
    cuda::siamese_residual_input_forward(rf, x.raw(), y.raw(), an, u.raw(), z.raw(), mean.f32(), rstd.f32());
  });
  report("siamese_res_input_fwd", s, dt, 7 * row_bytes, t_fused, iters);
  const double t_separate = time_ms(iters, [&] {
    cuda::siamese_residual_forward(rf, x.raw(), y.raw());
    cuda::siamese_input_forward(an, u.raw(), z.raw(), mean.f32(), rstd.f32(), false);
  });
  std::printf("fused_vs_separate shape=%-6s dtype=%-4s fused_us=%9.2f separate_us=%9.2f speedup=%.3f\n", s.name,
              dtype_name(dt), t_fused * 1e3, t_separate * 1e3, t_separate / t_fused);
  std::fflush(stdout);
  report("siamese_residual_bwd", s, dt, (s.dit ? 4 : 3) * row_bytes, time_ms(iters, [&] {
           cuda::siamese_residual_backward(r, dx.raw(), dy.raw(), dz.raw(), s.dit ? at(mod, 5 * D) : nullptr);
         }),
         iters);
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::atoi(argv[1]) : 20;
  if (!cuda_available()) {
    std::printf("bench_cuda_kernels: no CUDA device visible\n");
    return 0;
  }
  cudaDeviceProp prop;
  ck(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  g_flush_bytes = 2 * static_cast<size_t>(std::max(prop.l2CacheSize, 1 << 20));
  ck(cudaMalloc(&g_flush, g_flush_bytes), "cudaMalloc");
  std::printf("device=%s l2_MB=%.1f\n", prop.name, prop.l2CacheSize / 1e6);
  const Shape2 shapes[] = {{"deit_s", 256 * 197, 384, 197, false},
                           {"dit_l", 256 * 64, 1024, 64, true},
                           {"dit_xl", 64 * 256, 1152, 256, true}};
  for (const auto& s : shapes)
    for (DType dt : {DType::F32, DType::BF16}) bench_shape(s, dt, iters);
  cudaFree(g_flush);
  return 0;
}
#endif
