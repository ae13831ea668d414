// The transformer MLP (timm Mlp: fc1, GELU, fc2) forward + backward on the
// GPU with its bias, GELU and bias gradients as cuBLASLt epilogues
// (kernels/cuda/matmul_lt.h) against the separate passes (cuBLAS GEMM, bias
// kernel, activation kernel, column sums; set_matmul_epilogues(false)), at
// DeiT-S shapes: rows 256*197 (batch 256), D 384, hidden 1536. GELU erf
// (DeiT: the bias epilogue, then the activation kernel) and tanh (DiT's
// form: GELU and its derivative in the epilogue), bf16 (bf16 weights and
// activations, fp32 bias and weight gradients, as precision: bf16 trains)
// and fp32.
//
// Per row: ms of one forward + backward each way (median of `iters` after 3
// warm-ups, cudaEvent timed), TFLOP/s of the fused run (the six GEMMs,
// 2*rows*D*hidden each), speedup = separate / fused, the epilogues that ran
// and fell back in one fused pass (a fallback means cuBLASLt refused a
// configuration on this GPU), and the largest difference between the two
// paths' f and dz relative to the largest |value| (they round differently
// under bf16, so about 1e-2 there and 1e-6 in fp32).
//   usage: bench_mlp_epilogue [iters=20] [batch=256]
#include <cstdio>
#include <cstdlib>

#ifndef VT_CUDA

int main() {
  std::printf("bench_mlp_epilogue: built without CUDA\n");
  return 0;
}

#else

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "bench/cuda_timing.h"
#include "core/allocator.h"
#include "core/tensor.h"
#include "kernels/activation.h"
#include "kernels/cuda/matmul_lt.h"
#include "kernels/matmul.h"

using namespace vt;

namespace {

const auto ck = vt_bench::cuda_check;

double time_ms(int iters, const std::function<void()>& f) { return vt_bench::median_event_ms(iters, f); }

// Values in [-scale, scale) from a multiplicative hash (a Philox normal per
// element would dominate the set-up at these sizes).
Tensor rand_dev(const Shape& s, DType dt, uint64_t stream, float scale) {
  Tensor h = Tensor::empty(s);
  float* p = h.f32();
  for (int64_t i = 0; i < h.numel(); ++i) {
    const uint32_t k = static_cast<uint32_t>(i) * 2654435761u + static_cast<uint32_t>(stream) * 40503u;
    p[i] = scale * (static_cast<float>(k >> 8) * (2.0f / 16777216.0f) - 1.0f);
  }
  return h.to(dt).to(Device::cuda(0));
}

// max |a - b| / max |b|.
double rel_diff(const Tensor& a, const Tensor& b) {
  const auto x = a.to(Device::cpu()).to(DType::F32).to_vector(), y = b.to(Device::cpu()).to(DType::F32).to_vector();
  double m = 0.0, s = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    m = std::max(m, std::fabs(static_cast<double>(x[i]) - y[i]));
    s = std::max(s, std::fabs(static_cast<double>(y[i])));
  }
  return m / std::max(s, 1e-30);
}

struct Mlp {
  Tensor z, w1, b1, w2, b2, h1, h2, f, df, dh, dz, dw1, db1, dw2, db2;
  Activation act;
  void step() {
    linear_act_forward(act, z, w1, b1, h1, h2);
    linear_forward(h2, w2, b2, f);
    act_linear_backward(act, df, h2, w2, h1, dh, dw2, db2);
    linear_backward(dh, z, w1, dz, dw1, db1);
  }
};

void run(Activation act, DType dt, int64_t rows, int64_t d, int64_t hidden, int iters) {
  Mlp m;
  m.act = act;
  m.z = rand_dev({rows, d}, dt, 1, 1.0f);
  m.w1 = rand_dev({hidden, d}, dt, 2, 0.05f);
  m.b1 = rand_dev({hidden}, DType::F32, 3, 0.1f);
  m.w2 = rand_dev({d, hidden}, dt, 4, 0.03f);
  m.b2 = rand_dev({d}, DType::F32, 5, 0.1f);
  m.df = rand_dev({rows, d}, dt, 6, 1.0f);
  const Device dev = Device::cuda(0);
  for (Tensor* t : {&m.h1, &m.h2, &m.dh}) *t = Tensor::empty({rows, hidden}, dt, dev);
  for (Tensor* t : {&m.f, &m.dz}) *t = Tensor::empty({rows, d}, dt, dev);
  m.dw1 = Tensor::zeros({hidden, d}).to(dev);
  m.db1 = Tensor::zeros({hidden}).to(dev);
  m.dw2 = Tensor::zeros({d, hidden}).to(dev);
  m.db2 = Tensor::zeros({d}).to(dev);

  set_matmul_epilogues(false);
  m.step();
  const Tensor f_sep = m.f.clone(), dz_sep = m.dz.clone();
  const double sep = time_ms(iters, [&] { m.step(); });
  set_matmul_epilogues(true);
  const cuda::LtCounts c0 = cuda::lt_counts();
  m.step();
  const cuda::LtCounts c1 = cuda::lt_counts();
  const double df_rel = rel_diff(m.f, f_sep), ddz_rel = rel_diff(m.dz, dz_sep);
  const double fused = time_ms(iters, [&] { m.step(); });
  const double flops = 6.0 * 2.0 * static_cast<double>(rows) * d * hidden;
  std::printf("%-9s %-5s  fused %8.3f ms (%6.1f TFLOP/s)  separate %8.3f ms  speedup %.3fx  epilogues %lld, "
              "fallbacks %lld  |f diff| %.1e  |dz diff| %.1e\n",
              activation_name(act), dtype_name(dt), fused, flops / fused * 1e-9, sep, sep / fused,
              static_cast<long long>(c1.fused - c0.fused), static_cast<long long>(c1.fallback - c0.fallback), df_rel,
              ddz_rel);
  std::printf("{\"bench\":\"mlp_epilogue\",\"act\":\"%s\",\"dtype\":\"%s\",\"rows\":%lld,\"d\":%lld,\"hidden\":%lld,"
              "\"fused_ms\":%.4f,\"separate_ms\":%.4f,\"speedup\":%.4f,\"fallbacks\":%lld}\n",
              activation_name(act), dtype_name(dt), static_cast<long long>(rows), static_cast<long long>(d),
              static_cast<long long>(hidden), fused, sep, sep / fused, static_cast<long long>(c1.fallback - c0.fallback));
}

}  // namespace

int main(int argc, char** argv) {
  const int iters = argc > 1 ? std::max(1, std::atoi(argv[1])) : 20;
  if (!cuda_available()) {
    std::printf("bench_mlp_epilogue: no CUDA device visible\n");
    return 0;
  }
  const int64_t batch = argc > 2 ? std::max(1, std::atoi(argv[2])) : 256;
  const int64_t rows = batch * 197, d = 384, hidden = 1536;
  std::printf("MLP forward+backward, DeiT-S batch %lld (rows %lld, D %lld, hidden %lld), %d iters\n",
              static_cast<long long>(batch), static_cast<long long>(rows), static_cast<long long>(d), static_cast<long long>(hidden), iters);
  for (DType dt : {DType::BF16, DType::F32})
    for (Activation act : {Activation::GeluErf, Activation::GeluTanh}) run(act, dt, rows, d, hidden, iters);
  return 0;
}

#endif
