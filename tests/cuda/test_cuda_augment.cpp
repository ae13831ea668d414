// The batched augmentation kernels (kernels/augment.h) on CUDA against their
// CPU twins, bit for bit: every step kind (flip, AutoContrast, Equalize,
// Posterize, Solarize / Invert, SolarizeAdd, Color, Contrast, Brightness,
// Sharpness, bicubic affine), each sample of a batch with its own
// parameters, on images with texture, flat regions, a constant image and a
// two-valued one (the lut builders' identity branches); RandomErasing's
// regenerated normals; whole batches through augment_apply. The CPU twins
// are checked against the host pipeline's Pillow-exact ops in
// tests/data/test_augment_ops.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/philox.h"
#include "cuda_test_util.h"
#include "kernels/augment.h"
#ifdef VT_CUDA_EMU
#include "emu/emu_trace.h"
#endif

namespace vt {
namespace {

using namespace cudatest;

// N images of H x W: sample n % 4 == 2 constant, == 3 two-valued; others a
// gradient with Philox noise and a flat block.
Tensor images(int64_t N, int H, int W, uint64_t seed) {
  Tensor t = Tensor::empty({N, H, W, 3}, DType::U8);
  for (int64_t n = 0; n < N; ++n) {
    Philox g(seed, static_cast<uint64_t>(n));
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < 3; ++c) {
          int v;
          if (n % 4 == 2) v = 90 + 20 * c;
          else if (n % 4 == 3) v = (x + y) % 2 ? 40 : 200;
          else if (y < H / 3 && x < W / 3) v = 17 * (c + 1);
          else v = (x * 255 / W + y * 97 / H + c * 40) % 256 + static_cast<int>(g.next_u32() % 9) - 4;
          t.u8()[((n * H + y) * W + x) * 3 + c] = static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
        }
  }
  return t;
}

// Per-sample arguments of `kind` with parameters varying by sample.
std::vector<AugmentStepArgs> args_of(int kind, int64_t N, int H, int W) {
  std::vector<AugmentStepArgs> v(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    AugmentStepArgs& a = v[static_cast<size_t>(n)];
    a.kind = kind;
    const double t = static_cast<double>(n) / static_cast<double>(N);
    a.ival = kind == kAugPosterize ? static_cast<int>(n % 9) : kind == kAugSolarize ? static_cast<int>(n * 61 % 257)
                                                                                    : static_cast<int>(n * 23 % 111);
    a.factor = static_cast<float>(0.1 + 1.8 * t);  // timm's enhance range [0.1, 1.9]
    a.fill[0] = 124, a.fill[1] = 116, a.fill[2] = 104;
    if (kind == kAugAffine) {
      const double ang = (t - 0.5) * 1.0;  // radians, rotation about the centre + shear + translation
      const double c = std::cos(ang), s = std::sin(ang);
      a.m[0] = c, a.m[1] = s + 0.3 * (t - 0.5), a.m[3] = -s, a.m[4] = c;
      a.m[2] = W / 2.0 - c * W / 2.0 - a.m[1] * H / 2.0 + (n % 3 - 1) * 0.45 * W * t;
      a.m[5] = H / 2.0 + s * W / 2.0 - c * H / 2.0 + (n % 2) * 0.2 * H;
    }
  }
  return v;
}

TEST(CudaAugment, EveryStepKindMatchesTheCpuTwin) {
  const int64_t N = 9;
  for (const auto& hw : {std::pair<int, int>{19, 23}, std::pair<int, int>{40, 33}}) {
    const int H = hw.first, W = hw.second;
    const Tensor in = images(N, H, W, 4);
    for (int kind = kAugCopy; kind < kAugNumKinds; ++kind) {
      const std::vector<AugmentStepArgs> args = args_of(kind, N, H, W);
      Tensor cpu = Tensor::empty(in.shape(), DType::U8);
      augment_step(in, args, cpu);
      if (kind != kAugCopy) EXPECT_NE(0, std::memcmp(cpu.u8(), in.u8(), in.nbytes())) << "kind " << kind;
      if (!cuda_available()) continue;
      Tensor gin = in.to(Device::cuda(0));
      Tensor gout = Tensor::zeros(in.shape(), DType::U8, Device::cuda(0));
      augment_step(gin, args, gout);
      const Tensor back = gout.to(Device::cpu());
      EXPECT_EQ(0, std::memcmp(back.u8(), cpu.u8(), cpu.nbytes())) << "kind " << kind << " " << H << "x" << W;
    }
  }
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible (the CPU twins ran)";
}

#ifdef VT_CUDA_EMU
// The per-sample arguments reach the device from page-locked memory: a copy
// from pageable memory may make the host wait for the stream (CUDA Runtime
// API, "API synchronization behavior"), the loader thread behind the step.
TEST(CudaAugment, ArgumentsUploadFromPinnedMemory) {
  const int64_t N = 4;
  const int H = 12, W = 10;
  const Tensor gin = images(N, H, W, 3).to(Device::cuda(0));
  Tensor gout = Tensor::zeros(gin.shape(), DType::U8, Device::cuda(0));
  augment_step(gin, args_of(kAugFlip, N, H, W), gout);  // warm: the staging's first allocation
  const size_t pageable0 = vt_emu_pageable_h2d_count();
  for (int kind = kAugCopy; kind < kAugNumKinds; ++kind) augment_step(gin, args_of(kind, N, H, W), gout);
  EXPECT_EQ(vt_emu_pageable_h2d_count(), pageable0);
}
#endif

// Different kinds per sample in one step, several steps, normalisation and
// erasing: augment_apply on CUDA == on the CPU.
TEST(CudaAugment, WholeBatchesMatchTheCpuTwins) {
  const int64_t N = 12;
  const int H = 28, W = 31;
  const Tensor in = images(N, H, W, 9);
  AugmentBatchArgs a;
  a.mean = {0.485f, 0.456f, 0.406f}, a.std = {0.229f, 0.224f, 0.225f};
  for (int s = 0; s < 3; ++s) {
    std::vector<AugmentStepArgs> step(static_cast<size_t>(N));
    for (int64_t n = 0; n < N; ++n) {
      const int kind = s == 0 ? (n % 2 ? kAugFlip : kAugCopy) : static_cast<int>((n * 5 + s * 7) % kAugNumKinds);
      step[static_cast<size_t>(n)] = args_of(kind, N, H, W)[static_cast<size_t>(n)];
    }
    a.steps.push_back(step);
  }
  a.erase.resize(static_cast<size_t>(N));
  for (int64_t n = 0; n < N; ++n) {
    AugmentEraseArgs& e = a.erase[static_cast<size_t>(n)];
    if (n % 3 == 0) continue;  // not erased
    e.top = static_cast<int>(n % 5), e.left = static_cast<int>(n % 7), e.height = 5 + static_cast<int>(n % 4),
    e.width = 3 + static_cast<int>(n % 6);
    e.seed = 11, e.stream = philox_stream(2, static_cast<uint64_t>(n)), e.block = static_cast<uint64_t>(n), e.lane = n % 4;
  }
  const Tensor before = in.clone();
  Tensor cpu = Tensor::empty({N, 3, H, W});
  augment_apply(in, a, cpu);
  EXPECT_EQ(0, std::memcmp(before.u8(), in.u8(), in.nbytes()));  // the input is read only
  // The erased values are the host's Philox::normal() draws.
  for (int64_t n = 1; n < N; n += 3) {
    const AugmentEraseArgs& e = a.erase[static_cast<size_t>(n)];
    Philox g = Philox::at(PhiloxPosition{e.seed, e.stream, e.block, e.lane});
    for (int c = 0; c < 3; ++c)
      for (int y = e.top; y < e.top + e.height; ++y)
        for (int x = e.left; x < e.left + e.width; ++x)
          ASSERT_EQ(cpu.f32()[((n * 3 + c) * H + y) * W + x], static_cast<float>(g.normal())) << n;
  }
  if (!cuda_available()) GTEST_SKIP() << "no CUDA device visible (the CPU twins ran)";
  Tensor gout = Tensor::zeros({N, 3, H, W}, DType::F32, Device::cuda(0));
  augment_apply(in.to(Device::cuda(0)), a, gout);
  const Tensor back = gout.to(Device::cpu());
  EXPECT_EQ(0, std::memcmp(back.f32(), cpu.f32(), cpu.nbytes()));
  // With a kept scratch (a training step's): a smaller batch first (the
  // buffers grow), then this one twice; the same bits each time.
  AugmentScratch scratch;
  AugmentBatchArgs half = a;
  for (auto& step : half.steps) step.resize(static_cast<size_t>(N / 2));
  half.erase.resize(static_cast<size_t>(N / 2));
  Tensor ghalf = Tensor::zeros({N / 2, 3, H, W}, DType::F32, Device::cuda(0));
  augment_apply(in.slice(0, 0, N / 2).contiguous().to(Device::cuda(0)), half, ghalf, &scratch);
  const Tensor back_half = ghalf.to(Device::cpu());
  EXPECT_EQ(0, std::memcmp(back_half.f32(), cpu.f32(), back_half.nbytes()));
  for (int k = 0; k < 2; ++k) {
    Tensor g = Tensor::zeros({N, 3, H, W}, DType::F32, Device::cuda(0));
    augment_apply(in.to(Device::cuda(0)), a, g, &scratch);
    const Tensor b = g.to(Device::cpu());
    EXPECT_EQ(0, std::memcmp(b.f32(), cpu.f32(), cpu.nbytes())) << "scratch run " << k;
  }
}

}  // namespace
}  // namespace vt
