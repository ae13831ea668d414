// Shared by the VAE emulator tests (tests/cuda/emu/vae/): random inputs,
// random-weight diffusers AutoencoderKL state dicts, and the difference
// measures the tests bound.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/philox.h"
#include "vae/autoencoder_kl.h"

namespace vt {
namespace vae_emu {

inline const Device kGpu = Device::cuda(0);
inline const std::string kNarrow = std::string(VT_FIXTURES_DIR) + "/vae/narrow";

// N(mean, std) values of `shape` from Philox(seed, stream).
inline Tensor randn(const Shape& shape, uint64_t seed, uint64_t stream, double std, double mean = 0.0) {
  Tensor t = Tensor::empty(shape);
  Philox rng(seed, stream);
  float* p = t.f32();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(rng.normal(mean, std));
  return t;
}

// A diffusers AutoencoderKL state dict for `cfg` with random weights: the
// names and shapes of diffusers' Encoder/Decoder (autoencoders/vae.py), so
// the strict loader rejects any mismatch. Convolutions ~ N(0, 1/fan_in)
// keep activations O(1); GroupNorm weights near 1.
struct RandomWeights {
  const AutoencoderKLConfig& cfg;
  uint64_t seed;
  std::map<std::string, Tensor> sd;
  uint64_t stream = 0;

  void conv(const std::string& p, int64_t cin, int64_t cout, int64_t k) {
    sd[p + ".weight"] = randn({cout, cin, k, k}, seed, ++stream, 1.0 / std::sqrt(double(cin * k * k)));
    sd[p + ".bias"] = randn({cout}, seed, ++stream, 0.1);
  }
  void linear(const std::string& p, int64_t c) {
    sd[p + ".weight"] = randn({c, c}, seed, ++stream, 1.0 / std::sqrt(double(c)));
    sd[p + ".bias"] = randn({c}, seed, ++stream, 0.1);
  }
  void norm(const std::string& p, int64_t c) {
    sd[p + ".weight"] = randn({c}, seed, ++stream, 0.1, 1.0);
    sd[p + ".bias"] = randn({c}, seed, ++stream, 0.1);
  }
  void resnet(const std::string& p, int64_t cin, int64_t cout) {
    norm(p + ".norm1", cin);
    conv(p + ".conv1", cin, cout, 3);
    norm(p + ".norm2", cout);
    conv(p + ".conv2", cout, cout, 3);
    if (cin != cout) conv(p + ".conv_shortcut", cin, cout, 1);
  }
  void mid(const std::string& p, int64_t c) {
    resnet(p + ".resnets.0", c, c);
    norm(p + ".attentions.0.group_norm", c);
    for (const char* n : {".to_q", ".to_k", ".to_v", ".to_out.0"}) linear(p + ".attentions.0" + n, c);
    resnet(p + ".resnets.1", c, c);
  }
  std::map<std::string, Tensor> build() {
    const auto& ch = cfg.block_out_channels;
    const size_t levels = ch.size();
    const int64_t lat = cfg.latent_channels;
    conv("encoder.conv_in", cfg.in_channels, ch[0], 3);
    int64_t cin = ch[0];
    for (size_t i = 0; i < levels; ++i) {
      const std::string p = "encoder.down_blocks." + std::to_string(i);
      for (int64_t j = 0; j < cfg.layers_per_block; ++j, cin = ch[i])
        resnet(p + ".resnets." + std::to_string(j), cin, ch[i]);
      if (i + 1 < levels) conv(p + ".downsamplers.0.conv", ch[i], ch[i], 3);
    }
    mid("encoder.mid_block", ch.back());
    norm("encoder.conv_norm_out", ch.back());
    conv("encoder.conv_out", ch.back(), 2 * lat, 3);
    conv("quant_conv", 2 * lat, 2 * lat, 1);
    conv("post_quant_conv", lat, lat, 1);
    conv("decoder.conv_in", lat, ch.back(), 3);
    mid("decoder.mid_block", ch.back());
    cin = ch.back();
    for (size_t i = 0; i < levels; ++i) {
      const int64_t cout = ch[levels - 1 - i];
      const std::string p = "decoder.up_blocks." + std::to_string(i);
      for (int64_t j = 0; j <= cfg.layers_per_block; ++j, cin = cout)
        resnet(p + ".resnets." + std::to_string(j), cin, cout);
      if (i + 1 < levels) conv(p + ".upsamplers.0.conv", cout, cout, 3);
    }
    norm("decoder.conv_norm_out", ch[0]);
    conv("decoder.conv_out", ch[0], cfg.out_channels, 3);
    return sd;
  }
};

inline AutoencoderKLConfig config_of(std::vector<int64_t> channels, int64_t layers, int64_t groups) {
  AutoencoderKLConfig c;
  c.block_out_channels = std::move(channels);
  c.layers_per_block = layers;
  c.norm_num_groups = groups;
  return c;
}

inline AutoencoderKL random_vae(const AutoencoderKLConfig& cfg, uint64_t seed) {
  return AutoencoderKL(cfg, RandomWeights{cfg, seed, {}}.build(), "random");
}

struct Diff {
  double max_abs = 0, rms_want = 0, rel_l2 = 0;
};
inline Diff diff_of(const Tensor& got, const Tensor& want) {
  EXPECT_EQ(got.shape(), want.shape());
  const std::vector<float> g = got.to_vector(), w = want.to_vector();
  double se = 0, sw = 0;
  Diff d;
  for (size_t i = 0; i < w.size(); ++i) {
    const double e = std::fabs(double(g[i]) - w[i]);
    d.max_abs = std::isnan(e) ? INFINITY : std::max(d.max_abs, e);
    se += e * e;
    sw += double(w[i]) * w[i];
  }
  d.rms_want = std::sqrt(sw / double(w.size()));
  d.rel_l2 = std::sqrt(se / std::max(sw, 1e-300));
  return d;
}

}  // namespace vae_emu
}  // namespace vt
