// One DiT training step on CPU at DiT-S/4 size (latent 32x32x4, 64 tokens,
// D 384, 12 blocks, learned sigma): q_sample, forward, the learned-sigma
// loss, backward, AdamW and EMA, as dittrain runs it. Compare with
// tools/bench_dit_step.py (the DiT repository's model in PyTorch eager).
//   usage: bench_dit_step [batch=32] [iters=5] [scheme=pre|siamese]
// Prints one JSON line: median seconds per step and images/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "backbone/optimizer_state.h"
#include "core/philox.h"
#include "diffusion/dit_model.h"
#include "diffusion/gaussian_diffusion.h"
#include "kernels/optim.h"

using namespace vt;

int main(int argc, char** argv) {
  const int64_t B = argc > 1 ? std::atoll(argv[1]) : 32;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 5;
  const std::string scheme = argc > 3 ? argv[3] : "pre";
  DiTConfig c = dit_preset("DiT-S/4");
  c.input_size = 32, c.in_channels = 4, c.num_classes = 1000;
  c.scheme = norm_scheme_from_name(scheme);
  DiT model(c);
  ParamStore& store = model.params();
  model.init_weights(0);
  // Non-zero final/adaLN layers, as after some training (zeros would make
  // parts of the backward trivially cheap for no one).
  Philox g(1, 1);
  Tensor w = store.weights();
  for (int64_t i = 0; i < w.numel(); ++i) w.f32()[i] += static_cast<float>(1e-3 * g.normal());
  model.set_pos_embed();
  OptimizerState opt(store, /*with_ema=*/true);
  const auto diff = GaussianDiffusion::linear();
  const int64_t C = c.in_channels, S = c.input_size;
  Tensor x0 = Tensor::empty({B, C, S, S}), noise = Tensor::empty({B, C, S, S}), xt = Tensor::empty({B, C, S, S});
  Tensor out = Tensor::empty({B, 2 * C, S, S}), dout = Tensor::empty({B, 2 * C, S, S});
  Tensor tt = Tensor::empty({B}), y = Tensor::empty({B}, DType::I32);
  std::vector<int> t(static_cast<size_t>(B));
  for (int64_t i = 0; i < x0.numel(); ++i) x0.f32()[i] = static_cast<float>(g.normal()), noise.f32()[i] = static_cast<float>(g.normal());
  for (int64_t b = 0; b < B; ++b) {
    t[static_cast<size_t>(b)] = static_cast<int>(g.integer(0, 999));
    tt.f32()[b] = static_cast<float>(t[static_cast<size_t>(b)]);
    y.i32()[b] = static_cast<int32_t>(g.integer(0, 1000));
  }
  AdamWParams hp;
  hp.lr = 1e-4, hp.weight_decay = 0;
  std::vector<double> secs;
  for (int it = 0; it <= iters; ++it) {  // iteration 0 is warm-up
    const auto t0 = std::chrono::steady_clock::now();
    diff.q_sample(x0, t, noise, xt);
    model.forward(xt, tt, y, out);
    diff.training_losses(out, x0, xt, noise, t, dout);
    store.zero_grad();
    model.backward(dout);
    opt.adamw_step(hp);
    opt.update_ema(0.9999f);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (it > 0) secs.push_back(s);
  }
  std::sort(secs.begin(), secs.end());
  const double med = secs[secs.size() / 2];
  std::printf("{\"bench\": \"dit_step\", \"model\": \"DiT-S/4\", \"scheme\": \"%s\", \"batch\": %lld, "
              "\"sec_per_step\": %.4f, \"img_per_s\": %.2f, \"params\": %lld}\n",
              scheme.c_str(), static_cast<long long>(B), med, static_cast<double>(B) / med,
              static_cast<long long>(model.num_params()));
  return 0;
}
