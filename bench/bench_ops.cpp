// Memory-bound op bandwidth (GB/s) at DeiT-S training shapes, each against
// a threaded memcpy of the same number of bytes in the same run (an op that
// reads 2 and writes 1 array is compared with copying 1.5 arrays' worth, so
// the ratio is the fraction of copy bandwidth the op reaches).
//   LayerNorm fwd/bwd: [12608 x 384];  GELU (erf, tanh) fwd/bwd: [12608 x 1536];
//   add, axpy, AdamW step over 22M parameters (DeiT-S size).
// Usage: bench_ops [min_seconds_per_op (default 0.5)]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include "bench/bench_util.h"
#include "core/philox.h"
#include "core/tensor.h"
#include "kernels/activation.h"
#include "kernels/elementwise.h"
#include "kernels/layernorm.h"
#include "kernels/optim.h"

using namespace vt;

namespace {

Tensor random(const Shape& s, uint64_t stream) { return vt_bench::random_uniform(s, 11, stream, -1.0f, 1.0f); }

using vt_bench::best_seconds;

// memcpy split across the OpenMP threads, as the ops are.
void parallel_copy(char* dst, const char* src, size_t bytes) {
#pragma omp parallel
  {
    const size_t nt = omp_get_num_threads(), id = omp_get_thread_num();
    const size_t chunk = (bytes + nt - 1) / nt, lo = std::min(bytes, id * chunk), hi = std::min(bytes, lo + chunk);
    std::memcpy(dst + lo, src + lo, hi - lo);
  }
}

// Copy bandwidth (read + write bytes per second) for moving `bytes` of traffic.
double copy_gbs(size_t traffic_bytes, double min_s) {
  const size_t n = traffic_bytes / 2;
  static Tensor src, dst;
  if (!src.defined() || static_cast<size_t>(src.numel()) * 4 < n) {
    src = random({static_cast<int64_t>(n / 4 + 1)}, 99);
    dst = Tensor::zeros(src.shape());
  }
  const double s = best_seconds([&] { parallel_copy(static_cast<char*>(dst.raw()), static_cast<const char*>(src.raw()), n); }, min_s);
  return traffic_bytes / s * 1e-9;
}

void report(const char* name, size_t bytes, double secs, double min_s) {
  const double gbs = bytes / secs * 1e-9, ref = copy_gbs(bytes, min_s);
  std::printf("%-34s %8.2f GB/s  %8.3f ms  memcpy %7.2f GB/s  ratio %.2f\n", name, gbs, secs * 1e3, ref, gbs / ref);
  std::printf("{\"bench\":\"ops\",\"op\":\"%s\",\"gbs\":%.3f,\"ms\":%.4f,\"memcpy_gbs\":%.3f}\n", name, gbs, secs * 1e3,
              ref);
}

}  // namespace

int main(int argc, char** argv) {
  const double min_s = argc > 1 ? std::atof(argv[1]) : 0.5;
  std::printf("threads: %d\n", omp_get_max_threads());
  const int64_t R = 12608, D = 384, H = 1536;
  const size_t f = sizeof(float);

  {
    Tensor x = random({R, D}, 1), w = random({D}, 2), b = random({D}, 3), y = Tensor::empty({R, D});
    Tensor mean = Tensor::empty({R}), rstd = Tensor::empty({R}), dy = random({R, D}, 4), dx = Tensor::empty({R, D});
    Tensor dw = Tensor::zeros({D}), db = Tensor::zeros({D});
    // Essential traffic: fwd reads x, writes y; bwd reads dy and x, writes dx.
    report("layernorm fwd [12608x384]", 2 * R * D * f,
           best_seconds([&] { layernorm_forward(x, w, b, 1e-6f, y, mean, rstd); }, min_s), min_s);
    report("layernorm bwd [12608x384]", 3 * R * D * f,
           best_seconds([&] { layernorm_backward(dy, x, w, mean, rstd, dx, dw, db); }, min_s), min_s);
  }
  {
    Tensor x = random({R, H}, 5), y = Tensor::empty({R, H}), dy = random({R, H}, 6), dx = Tensor::empty({R, H});
    for (Activation a : {Activation::GeluErf, Activation::GeluTanh}) {
      const std::string n = activation_name(a);
      report((n + " fwd [12608x1536]").c_str(), 2 * R * H * f,
             best_seconds([&] { activation_forward(a, x, y); }, min_s), min_s);
      report((n + " bwd [12608x1536]").c_str(), 3 * R * H * f,
             best_seconds([&] { activation_backward(a, dy, x, dx); }, min_s), min_s);
    }
  }
  {
    const int64_t P = 22050664;  // DeiT-S parameter count
    Tensor p = random({P}, 7), g = random({P}, 8), m = Tensor::zeros({P}), v = Tensor::zeros({P});
    Tensor out = Tensor::empty({P});
    report("add [22M]", 3 * P * f, best_seconds([&] { add(p, g, out); }, min_s), min_s);
    report("axpy [22M]", 3 * P * f, best_seconds([&] { axpy(1e-3f, g, out); }, min_s), min_s);
    AdamWParams hp;
    int64_t t = 0;
    // Reads p, g, m, v; writes p, m, v.
    report("adamw step [22M]", 7 * P * f, best_seconds([&] { adamw_step(p, g, m, v, hp, ++t); }, min_s), min_s);
  }
  return 0;
}
