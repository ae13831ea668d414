// Fused vs unfused SiameseNorm input kernel (DeiT form: post, pre and input
// LayerNorms) on CPU, forward and backward: time, effective GB/s (the bytes
// the fused kernel must move at minimum) and speed-up.
//   usage: bench_siamese [rows=6304] [dim=384] [iters=20]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>

#include "core/philox.h"
#include "kernels/siamese.h"

using namespace vt;

static double best_of(int iters, const std::function<void()>& f) {
  f();
  double best = 1e30;
  for (int i = 0; i < iters; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

int main(int argc, char** argv) {
  const int64_t R = argc > 1 ? std::atoll(argv[1]) : 32 * 197;
  const int64_t D = argc > 2 ? std::atoll(argv[2]) : 384;
  const int iters = argc > 3 ? std::atoi(argv[3]) : 20;
  Philox g(3, 3);
  auto rnd = [&](const Shape& s, float mean) {
    Tensor t = Tensor::empty(s);
    for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = static_cast<float>(g.normal(mean, 1.0));
    return t;
  };
  SiameseInputSpec s;
  s.x = rnd({R, D}, 0.0f);
  s.y = rnd({R, D}, 0.0f);
  for (SiameseNorm* n : {&s.post, &s.pre, &s.input}) {
    n->enabled = true;
    n->weight = rnd({D}, 1.0f);
    n->bias = rnd({D}, 0.0f);
  }
  Tensor u = Tensor::empty({R, D}), z = Tensor::empty({R, D}), m = Tensor::empty({3, R}), r = Tensor::empty({3, R});
  const double tf = best_of(iters, [&] { siamese_input_forward(s, u, z, m, r); });
  const double tfu = best_of(iters, [&] { siamese_input_forward_unfused(s, u, z, m, r); });
  SiameseInputGrads gr;
  gr.dz = rnd({R, D}, 0.0f);
  gr.du = rnd({R, D}, 0.0f);
  gr.dy_pass = rnd({R, D}, 0.0f);
  gr.dx = Tensor::empty({R, D});
  gr.dy = Tensor::empty({R, D});
  for (Tensor* t : {&gr.post_dw, &gr.post_db, &gr.pre_dw, &gr.pre_db, &gr.in_dw, &gr.in_db}) *t = Tensor::zeros({D});
  const double tb = best_of(iters, [&] { siamese_input_backward(s, m, r, gr); });
  const double tbu = best_of(iters, [&] { siamese_input_backward_unfused(s, m, r, gr); });
  const double row = static_cast<double>(R) * D * 4.0;
  const double bytes_f = 4 * row;  // read x, y; write u, z
  const double bytes_b = 7 * row;  // read x, y, dz, du, dy_pass; write dx, dy
  std::printf("{\"bench\":\"siamese_input_forward\",\"rows\":%lld,\"dim\":%lld,\"fused_ms\":%.3f,\"unfused_ms\":%.3f,"
              "\"fused_GBps\":%.2f,\"unfused_GBps\":%.2f,\"speedup\":%.2f}\n",
              static_cast<long long>(R), static_cast<long long>(D), tf * 1e3, tfu * 1e3, bytes_f / tf / 1e9,
              bytes_f / tfu / 1e9, tfu / tf);
  std::printf("{\"bench\":\"siamese_input_backward\",\"rows\":%lld,\"dim\":%lld,\"fused_ms\":%.3f,\"unfused_ms\":%.3f,"
              "\"fused_GBps\":%.2f,\"unfused_GBps\":%.2f,\"speedup\":%.2f}\n",
              static_cast<long long>(R), static_cast<long long>(D), tb * 1e3, tbu * 1e3, bytes_b / tb / 1e9,
              bytes_b / tbu / 1e9, tbu / tb);
  return 0;
}
