// The Philox 4x32-10 block function (Salmon et al., SC'11; Random123) as
// header-only code callable from host and CUDA device code, so a kernel
// draws exactly the numbers vt::Philox (core/philox.h) draws on the host for
// the same (seed, stream, block). vt::Philox is built on these functions.
//   key     = (seed lo, seed hi)
//   counter = (block lo, block hi, stream lo, stream hi)
// Plain structs, no std::array: device code cannot call std::array members
// without nvcc's relaxed-constexpr mode.
#pragma once
#include <math.h>

#include <cstdint>

#if defined(__CUDACC__)
#define VT_HOST_DEVICE __host__ __device__
#else
#define VT_HOST_DEVICE
#endif

namespace vt {

struct PhiloxWords {
  uint32_t w[4];
};

// One 10-round Philox4x32 block over counter c and key (k0, k1).
VT_HOST_DEVICE inline PhiloxWords philox4x32_10_words(PhiloxWords c, uint32_t k0, uint32_t k1) {
  const uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
  const uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kM0) * c.w[0];
    const uint64_t p1 = static_cast<uint64_t>(kM1) * c.w[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c = PhiloxWords{{hi1 ^ c.w[1] ^ k0, lo1, hi0 ^ c.w[3] ^ k1, lo0}};
  }
  return c;
}

// Block `block` of the generator vt::Philox(seed, stream).
VT_HOST_DEVICE inline PhiloxWords philox_block(uint64_t seed, uint64_t stream, uint64_t block) {
  PhiloxWords c{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), static_cast<uint32_t>(stream),
                 static_cast<uint32_t>(stream >> 32)}};
  return philox4x32_10_words(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Philox::uniform_double() from words (hi, lo): 53 random bits in [0, 1).
VT_HOST_DEVICE inline double philox_uniform_double(uint32_t hi, uint32_t lo) {
  const uint64_t u = (static_cast<uint64_t>(hi) << 32) | lo;
  return static_cast<double>(u >> 11) * (1.0 / 9007199254740992.0);
}

// The first uniform_double() of vt::Philox(seed, stream, first_block = block).
VT_HOST_DEVICE inline double philox_first_uniform_double(uint64_t seed, uint64_t stream, uint64_t block) {
  const PhiloxWords b = philox_block(seed, stream, block);
  return philox_uniform_double(b.w[0], b.w[1]);
}

// splitmix64 (Steele, Lea, Flood, OOPSLA'14): the mixing step of philox_stream.
VT_HOST_DEVICE inline uint64_t philox_splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// vt::philox_stream(a, b, c) (core/philox.h), callable from device code.
VT_HOST_DEVICE inline uint64_t philox_stream_mix(uint64_t a, uint64_t b, uint64_t c) {
  return philox_splitmix64(philox_splitmix64(philox_splitmix64(a) ^ b) ^ c);
}

// Box-Muller on two uniforms in [0, 1): Philox::normal()'s formula. Each
// normal consumes exactly one Philox block (u1 = words 0,1; u2 = words 2,3),
// so normal i of Philox(seed, stream) is philox_normal(seed, stream, i).
// Device double log/cos are within 1-2 ulp of glibc's, not always equal: a
// float rounding of the result can then differ by one float ulp (about one
// element in 10^8); on the host (and the CUDA emulator) the values are equal.
VT_HOST_DEVICE inline double philox_box_muller(double u1, double u2) {
  if (u1 < 1e-300) u1 = 1e-300;
  return sqrt(-2.0 * log(u1)) * cos(2.0 * 3.14159265358979323846 * u2);
}

// The i-th normal() of a fresh vt::Philox(seed, stream).
VT_HOST_DEVICE inline double philox_normal(uint64_t seed, uint64_t stream, uint64_t i) {
  const PhiloxWords b = philox_block(seed, stream, i);
  return philox_box_muller(philox_uniform_double(b.w[0], b.w[1]), philox_uniform_double(b.w[2], b.w[3]));
}

// Normal k (from 0) that a vt::Philox standing at (block, lane)
// (core/philox.h PhiloxPosition) draws with its k+1-th normal(): words
// lane + 4k .. lane + 4k + 3 counted from word 0 of `block`, spread over
// blocks block + k and (lane > 0) block + k + 1. Lets a kernel draw any
// normal of a recorded sequence independently.
VT_HOST_DEVICE inline double philox_normal_at(uint64_t seed, uint64_t stream, uint64_t block, uint32_t lane,
                                              uint64_t k) {
  const PhiloxWords a = philox_block(seed, stream, block + k);
  const PhiloxWords b = lane > 0 ? philox_block(seed, stream, block + k + 1) : a;
  uint32_t w[4];
  for (uint32_t i = 0; i < 4; ++i) {
    const uint32_t t = lane + i;
    w[i] = t < 4 ? a.w[t] : b.w[t - 4];
  }
  return philox_box_muller(philox_uniform_double(w[0], w[1]), philox_uniform_double(w[2], w[3]));
}

}  // namespace vt
