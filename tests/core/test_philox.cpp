// Philox 4x32-10 against the Random123 known-answer vectors (kat_vectors,
// philox4x32_10 lines), and distribution sanity of the derived draws.
#include <gtest/gtest.h>

#include <cmath>

#include "core/philox.h"

using vt::philox4x32_10;

TEST(Philox, Random123KnownAnswerZero) {
  auto r = philox4x32_10({0, 0, 0, 0}, {0, 0});
  EXPECT_EQ(r[0], 0x6627e8d5u);
  EXPECT_EQ(r[1], 0xe169c58du);
  EXPECT_EQ(r[2], 0xbc57ac4cu);
  EXPECT_EQ(r[3], 0x9b00dbd8u);
}

TEST(Philox, Random123KnownAnswerOnes) {
  auto r = philox4x32_10({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}, {0xffffffffu, 0xffffffffu});
  EXPECT_EQ(r[0], 0x408f276du);
  EXPECT_EQ(r[1], 0x41c83b0eu);
  EXPECT_EQ(r[2], 0xa20bc7c6u);
  EXPECT_EQ(r[3], 0x6d5451fdu);
}

TEST(Philox, Random123KnownAnswerPi) {
  auto r = philox4x32_10({0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}, {0xa4093822u, 0x299f31d0u});
  EXPECT_EQ(r[0], 0xd16cfe09u);
  EXPECT_EQ(r[1], 0x94fdccebu);
  EXPECT_EQ(r[2], 0x5001e420u);
  EXPECT_EQ(r[3], 0x24126ea1u);
}

TEST(Philox, SameKeySameStream) {
  vt::Philox a(7, 11), b(7, 11), c(7, 12);
  int same_c = 0;
  for (int i = 0; i < 100; ++i) {
    uint32_t x = a.next_u32();
    EXPECT_EQ(x, b.next_u32());
    same_c += (x == c.next_u32());
  }
  EXPECT_LT(same_c, 3);
}

TEST(Philox, UniformAndNormalMoments) {
  vt::Philox g(1, 2);
  const int n = 200000;
  double s = 0, s2 = 0, ns = 0, ns2 = 0;
  for (int i = 0; i < n; ++i) {
    double u = g.uniform_double();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    s += u;
    s2 += u * u;
    double z = g.normal();
    ns += z;
    ns2 += z * z;
  }
  // Closed forms: U(0,1) mean 1/2, var 1/12; N(0,1) mean 0, var 1. 5-sigma bounds.
  EXPECT_NEAR(s / n, 0.5, 5 * std::sqrt(1.0 / 12 / n));
  EXPECT_NEAR(s2 / n - (s / n) * (s / n), 1.0 / 12, 0.002);
  EXPECT_NEAR(ns / n, 0.0, 5 * std::sqrt(1.0 / n));
  EXPECT_NEAR(ns2 / n, 1.0, 0.02);
}

TEST(Philox, IntegerRangeInclusiveAndUniform) {
  vt::Philox g(3, 4);
  int counts[5] = {0};
  for (int i = 0; i < 50000; ++i) {
    int64_t v = g.integer(2, 6);
    ASSERT_GE(v, 2);
    ASSERT_LE(v, 6);
    counts[v - 2]++;
  }
  for (int c : counts) EXPECT_NEAR(c, 10000, 500);
}

TEST(Philox, BetaMean) {
  vt::Philox g(5, 6);
  const int n = 50000;
  double s = 0;
  for (int i = 0; i < n; ++i) s += g.beta(0.8, 0.8);
  EXPECT_NEAR(s / n, 0.5, 0.01);  // Beta(a, a) has mean 1/2
  s = 0;
  for (int i = 0; i < n; ++i) s += g.beta(2.0, 1.0);
  EXPECT_NEAR(s / n, 2.0 / 3.0, 0.01);  // a / (a + b)
}

// Philox::at(g.position()) draws what g draws next, at every lane of a
// block (after u32, u64, double and normal draws), and reports the same position.
TEST(Philox, AtPositionContinuesTheStream) {
  for (int skip = 0; skip < 11; ++skip) {
    vt::Philox g(0x123456789ABCull, vt::philox_stream(7, 8, 9), 3);
    for (int k = 0; k < skip; ++k) (k % 3 == 2) ? (void)g.normal() : (void)g.next_u32();
    const vt::PhiloxPosition p = g.position();
    EXPECT_LT(p.lane, 4u);
    vt::Philox h = vt::Philox::at(p);
    EXPECT_EQ(h.position(), p);
    for (int k = 0; k < 9; ++k) {
      ASSERT_EQ(h.next_u32(), g.next_u32()) << "skip " << skip << " draw " << k;
      ASSERT_EQ(h.normal(), g.normal()) << "skip " << skip << " draw " << k;
    }
  }
}
