// DeiT-S-sized backbone (L=12, D=384, heads 6, T=197) forward+backward on
// CPU for the Pre-Norm and SiameseNorm schemes: wall time per step and
// saved-activation bytes, and their siamese / pre ratios.
//   usage: bench_backbone [batch=32] [iters=3]
// Prints one JSON line per scheme and one with the ratios.
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "backbone/backbone.h"
#include "core/philox.h"

using namespace vt;

struct Result {
  double sec = 0;
  int64_t bytes = 0;
};

static Result run(NormScheme scheme, int64_t B, int iters) {
  BackboneConfig cfg;
  cfg.variant = ModelVariant::DeiT;
  cfg.scheme = scheme;
  cfg.dim = 384, cfg.depth = 12, cfg.heads = 6, cfg.mlp_ratio = 4.0;
  cfg.drop_path = drop_path_linspace(0.1f, cfg.depth);
  ParamStore store;
  Backbone bb(store, cfg);
  store.finalize();
  store.init(0);
  const int64_t T = 197;
  Tensor h = Tensor::empty({B, T, cfg.dim}), out = Tensor::empty({B, T, cfg.dim});
  Tensor dout = Tensor::empty({B, T, cfg.dim}), dh = Tensor::empty({B, T, cfg.dim});
  Philox g(1, 1);
  for (int64_t i = 0; i < h.numel(); ++i) h.f32()[i] = static_cast<float>(g.normal()), dout.f32()[i] = 1e-3f;
  bb.forward(h, Tensor(), out, true, 0, 0);  // warm-up (plans the workspace)
  bb.backward(dout, dh, Tensor());
  double best = 1e30;
  for (int it = 0; it < iters; ++it) {
    const auto t0 = std::chrono::steady_clock::now();
    bb.forward(h, Tensor(), out, true, 0, it + 1);
    bb.backward(dout, dh, Tensor());
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::printf("{\"bench\":\"backbone\",\"scheme\":\"%s\",\"batch\":%lld,\"tokens\":%lld,\"step_s\":%.4f,"
              "\"saved_activation_bytes\":%lld}\n",
              norm_scheme_name(scheme), static_cast<long long>(B), static_cast<long long>(T), best,
              static_cast<long long>(bb.saved_activation_bytes()));
  return {best, bb.saved_activation_bytes()};
}

int main(int argc, char** argv) {
  const int64_t B = argc > 1 ? std::atoll(argv[1]) : 32;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 3;
  // Alternate the order so that neither scheme always runs on a warmer machine.
  const Result p1 = run(NormScheme::Pre, B, iters);
  const Result s1 = run(NormScheme::Siamese, B, iters);
  const Result s2 = run(NormScheme::Siamese, B, iters);
  const Result p2 = run(NormScheme::Pre, B, iters);
  const double tp = std::min(p1.sec, p2.sec), ts = std::min(s1.sec, s2.sec);
  std::printf("{\"bench\":\"backbone_ratio\",\"batch\":%lld,\"time_ratio_siamese_over_pre\":%.4f,"
              "\"memory_ratio_siamese_over_pre\":%.4f}\n",
              static_cast<long long>(B), ts / tp, static_cast<double>(s1.bytes) / static_cast<double>(p1.bytes));
  return 0;
}
