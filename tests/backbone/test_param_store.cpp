#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "backbone/param_store.h"
#include "core/safetensors.h"

namespace vt {
namespace {

TEST(ParamStore, ViewsShareTheFlatBuffers) {
  ParamStore s;
  ParamId a = s.add("a.weight", {3, 4}, ParamInit::ones(), true);
  ParamId b = s.add("a.bias", {3}, ParamInit::constant(0.5f), false);
  EXPECT_THROW(s.value(a), std::logic_error);
  s.finalize();
  s.init(1);
  EXPECT_EQ(s.value(a).shape(), (Shape{3, 4}));
  EXPECT_TRUE(s.value(a).is_contiguous());
  // Writing through the view changes the flat buffer and vice versa.
  Tensor v = s.value(b);
  v.fill(2.0f);
  const float* w = s.weights().f32();
  EXPECT_EQ(w[s.info(b).offset], 2.0f);
  EXPECT_EQ(w[s.info(a).offset + 11], 1.0f);
  EXPECT_EQ(s.grads().numel(), s.numel());
  Tensor(s.grads()).fill(3.0f);
  EXPECT_EQ(s.grad(a).to_vector()[5], 3.0f);
  s.zero_grad();
  EXPECT_EQ(s.grad(b).to_vector()[2], 0.0f);
  EXPECT_FALSE(s.info(b).weight_decay);
  EXPECT_THROW(s.add("late", {1}, ParamInit::zeros(), true), std::invalid_argument);
}

TEST(ParamStore, RejectsBadRegistrations) {
  ParamStore s;
  s.add("x", {2}, ParamInit::zeros(), true);
  EXPECT_THROW(s.add("x", {2}, ParamInit::zeros(), true), std::invalid_argument);
  EXPECT_THROW(s.add("", {2}, ParamInit::zeros(), true), std::invalid_argument);
  EXPECT_THROW(s.add("y", {2, 0}, ParamInit::zeros(), true), std::invalid_argument);
  EXPECT_THROW(s.id("nope"), std::out_of_range);
}

TEST(ParamStore, InitIsKeyedByNameNotOrder) {
  ParamStore s1, s2;
  s1.add("p", {64, 32}, ParamInit::xavier_uniform(), true);
  s1.add("q", {1000}, ParamInit::trunc_normal(0.7f), true);
  s2.add("q", {1000}, ParamInit::trunc_normal(0.7f), true);
  s2.add("p", {64, 32}, ParamInit::xavier_uniform(), true);
  s1.finalize();
  s2.finalize();
  s1.init(9);
  s2.init(9);
  EXPECT_EQ(s1.value(s1.id("p")).to_vector(), s2.value(s2.id("p")).to_vector());
  EXPECT_EQ(s1.value(s1.id("q")).to_vector(), s2.value(s2.id("q")).to_vector());
  // xavier_uniform bound sqrt(6 / (fan_in + fan_out)) and a spread close to it.
  const double a = std::sqrt(6.0 / (32 + 64));
  double mx = 0;
  for (float x : s1.value(s1.id("p")).to_vector()) mx = std::max(mx, std::fabs(static_cast<double>(x)));
  EXPECT_LE(mx, a);
  EXPECT_GT(mx, 0.95 * a);
  // trunc_normal: within [-2, 2], standard deviation near 0.7 * (truncation shrinks it slightly).
  double ss = 0, m2 = 0;
  for (float x : s1.value(s1.id("q")).to_vector()) {
    EXPECT_LE(std::fabs(x), 2.0f);
    ss += x;
    m2 += static_cast<double>(x) * x;
  }
  const double sd = std::sqrt(m2 / 1000 - (ss / 1000) * (ss / 1000));
  EXPECT_NEAR(sd, 0.7 * 0.957, 0.06);  // var of N(0,.7) truncated at +-2.86 sd
}

// xavier_normal per row chunk (DeepNet's init of a fused qkv): each chunk's
// sample std matches gain * sqrt(2 / (fan_in + rows / chunks)); chunks that
// do not divide the rows are an error naming the parameter.
TEST(ParamStore, XavierNormalChunksHaveTheirOwnGain) {
  ParamStore s;
  s.add("qkv.weight", {3 * 40, 100}, ParamInit::xavier_normal({1.0f, 0.5f, 2.0f}), true);
  s.add("bad.weight", {4, 3}, ParamInit::xavier_normal({1.0f, 1.0f, 1.0f}), true);
  s.finalize();
  EXPECT_THROW(
      {
        try {
          s.init(5);
        } catch (const std::invalid_argument& e) {
          EXPECT_NE(std::string(e.what()).find("bad.weight"), std::string::npos) << e.what();
          throw;
        }
      },
      std::invalid_argument);
  ParamStore ok;
  ok.add("qkv.weight", {3 * 40, 100}, ParamInit::xavier_normal({1.0f, 0.5f, 2.0f}), true);
  ok.finalize();
  ok.init(5);
  const auto v = ok.value(0).to_vector();
  const double unit = std::sqrt(2.0 / (100 + 40));
  const double gains[3] = {1.0, 0.5, 2.0};
  for (int c = 0; c < 3; ++c) {
    double ss = 0;
    for (size_t i = c * 4000; i < (c + 1) * 4000u; ++i) ss += static_cast<double>(v[i]) * v[i];
    EXPECT_NEAR(std::sqrt(ss / 4000), gains[c] * unit, 0.05 * gains[c] * unit) << "chunk " << c;
  }
}

TEST(ParamStore, SafetensorsRoundTripAndStrictLoad) {
  ParamStore s;
  s.add("blocks.0.attn.qkv.weight", {6, 2}, ParamInit::normal(1.0f), true);
  s.add("blocks.0.attn.qkv.bias", {6}, ParamInit::normal(1.0f), false);
  s.finalize();
  s.init(3);
  const std::string path = ::testing::TempDir() + "/ps_roundtrip.safetensors";
  std::vector<std::pair<std::string, Tensor>> named;
  for (const auto& kv : s.state_dict()) named.emplace_back(kv.first, kv.second);
  save_safetensors(path, named);
  auto dict = load_safetensors(path);

  ParamStore t;
  t.add("blocks.0.attn.qkv.weight", {6, 2}, ParamInit::zeros(), true);
  t.add("blocks.0.attn.qkv.bias", {6}, ParamInit::zeros(), false);
  t.finalize();
  EXPECT_TRUE(t.load(dict).ok());
  EXPECT_EQ(t.weights().to_vector(), s.weights().to_vector());

  // Missing, unexpected and mismatched names are all reported, nothing loaded.
  ParamStore u;
  u.add("blocks.0.attn.qkv.weight", {2, 6}, ParamInit::zeros(), true);
  u.add("blocks.0.attn.proj.weight", {2, 2}, ParamInit::zeros(), true);
  u.finalize();
  try {
    u.load(dict, true);
    FAIL() << "strict load accepted a mismatching dict";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("missing: blocks.0.attn.proj.weight"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected: blocks.0.attn.qkv.bias"), std::string::npos) << m;
    EXPECT_NE(m.find("blocks.0.attn.qkv.weight: file [6, 2] vs model [2, 6]"), std::string::npos) << m;
  }
  for (float x : u.weights().to_vector()) EXPECT_EQ(x, 0.0f);
  const LoadReport r = u.load(dict, false);
  EXPECT_EQ(r.missing.size(), 1u);
  EXPECT_EQ(r.unexpected.size(), 1u);
  EXPECT_EQ(r.mismatched.size(), 1u);
  std::remove(path.c_str());
}

TEST(ParamStore, LoadsBf16AsFp32) {
  ParamStore s;
  s.add("w", {4}, ParamInit::zeros(), true);
  s.finalize();
  Tensor b = Tensor::from_vector({1.0f, -2.5f, 0.15625f, 3.0f}, {4}).to(DType::BF16);
  s.load({{"w", b}});
  EXPECT_EQ(s.value(0).to_vector(), (std::vector<float>{1.0f, -2.5f, 0.15625f, 3.0f}));
  EXPECT_THROW(s.load({{"w", Tensor::zeros({4}, DType::I32)}}), std::runtime_error);
}

}  // namespace
}  // namespace vt
