// Helpers for the emulated-CUDA training tests (test_train_emu): the same
// trainer run on the CPU and on emulated CUDA is compared step by step and
// tensor by tensor. Shared by every trainer's test file in this folder.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/philox.h"
#include "core/safetensors.h"
#include "core/tensor.h"
#include "kernels/attention.h"

size_t vt_emu_malloc_count();  // tests/cuda/emu/runtime.cpp: cudaMalloc calls so far
size_t vt_emu_d2h_count();     // and device->host copies so far

namespace vt_test {

// |a - b| / max(|b|, tiny) for every step; fails naming the step.
inline void expect_losses_close(const std::vector<double>& got, const std::vector<double>& want, double rel,
                                const std::string& what, size_t first_step = 1) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(got[i] - want[i]) / std::max(std::fabs(want[i]), 1e-12);
    EXPECT_LE(d, rel) << what << ": loss of step " << first_step + i << " " << got[i] << " vs " << want[i];
  }
}

// Largest |a - b| over every tensor of two safetensors files with the same
// names and shapes (F32); fails on a missing name or a shape difference.
inline double max_abs_diff(const std::string& file_a, const std::string& file_b, std::string* worst = nullptr) {
  const auto a = vt::load_safetensors(file_a), b = vt::load_safetensors(file_b);
  EXPECT_EQ(a.size(), b.size()) << file_a << " vs " << file_b;
  double m = 0;
  for (const auto& [name, ta] : a) {
    auto it = b.find(name);
    if (it == b.end()) {
      ADD_FAILURE() << name << " missing from " << file_b;
      continue;
    }
    const vt::Tensor& tb = it->second;
    if (ta.shape() != tb.shape() || ta.dtype() != vt::DType::F32 || tb.dtype() != vt::DType::F32) {
      ADD_FAILURE() << name << ": " << ta.str() << " vs " << tb.str();
      continue;
    }
    const vt::Tensor ca = ta.contiguous(), cb = tb.contiguous();
    for (int64_t i = 0; i < ca.numel(); ++i) {
      const double d = std::fabs(static_cast<double>(ca.f32()[i]) - cb.f32()[i]);
      if (d > m || std::isnan(d)) {
        m = std::isnan(d) ? INFINITY : d;
        if (worst) *worst = name;
      }
    }
  }
  return m;
}

// The attention calls made while f() runs, by io dtype (kernels/attention.h).
template <class F>
vt::AttentionCalls attention_calls_during(F f) {
  const vt::AttentionCalls a = vt::attention_calls();
  f();
  const vt::AttentionCalls b = vt::attention_calls();
  return {b.forward_f32 - a.forward_f32, b.forward_bf16 - a.forward_bf16, b.backward_f32 - a.backward_f32,
          b.backward_bf16 - a.backward_bf16, b.forward_cudnn - a.forward_cudnn};
}

// A bf16 run's attention saw only BF16 q/k/v (bf16 activations reach the
// attention kernels, cuDNN's SDPA on a GPU): `backward_calls` backward calls
// (steps x depth), at least as many forward ones (evaluation adds some).
inline void expect_bf16_attention(const vt::AttentionCalls& c, int64_t backward_calls) {
  EXPECT_EQ(c.forward_f32, 0);
  EXPECT_EQ(c.backward_f32, 0);
  EXPECT_EQ(c.backward_bf16, backward_calls);
  EXPECT_GE(c.forward_bf16, backward_calls);
}

// A latent shard for the tiny DiT runs: DIR/shard_000.safetensors with n
// latents [4, 8, 8] (N(0, 25), Philox-keyed) and labels i % 3.
inline void write_tiny_latents(const std::string& dir, int64_t n) {
  std::filesystem::create_directories(dir);
  vt::Tensor lat = vt::Tensor::empty({n, 4, 8, 8});
  vt::Philox rng(3, 4);
  for (int64_t i = 0; i < lat.numel(); ++i) lat.f32()[i] = static_cast<float>(5.0 * rng.normal());
  vt::Tensor lab = vt::Tensor::empty({n}, vt::DType::I32);
  for (int64_t i = 0; i < n; ++i) lab.i32()[i] = static_cast<int32_t>(i % 3);
  vt::save_safetensors(dir + "/shard_000.safetensors", {{"latents", lat}, {"labels", lab}});
}

}  // namespace vt_test
