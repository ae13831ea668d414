#include "core/philox.h"

#include <cmath>

namespace vt {

namespace {
constexpr uint32_t kM0 = 0xD2511F53u, kM1 = 0xCD9E8D57u;
constexpr uint32_t kW0 = 0x9E3779B9u, kW1 = 0xBB67AE85u;

inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
}  // namespace

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k[0] += kW0;
      k[1] += kW1;
    }
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kM0, c[0], hi0, lo0);
    mulhilo(kM1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

uint64_t philox_stream(uint64_t a, uint64_t b, uint64_t c) {
  return splitmix64(splitmix64(splitmix64(a) ^ b) ^ c);
}

Philox::Philox(uint64_t seed, uint64_t stream, uint64_t first_block)
    : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}, stream_(stream), block_(first_block) {}

void Philox::refill() {
  PhiloxCounter ctr{static_cast<uint32_t>(block_), static_cast<uint32_t>(block_ >> 32), static_cast<uint32_t>(stream_),
                    static_cast<uint32_t>(stream_ >> 32)};
  buf_ = philox4x32_10(ctr, key_);
  ++block_;
  lane_ = 0;
}

uint32_t Philox::next_u32() {
  if (lane_ >= 4) refill();
  return buf_[lane_++];
}

uint64_t Philox::next_u64() {
  uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

float Philox::uniform() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }

double Philox::uniform_double() { return static_cast<double>(next_u64() >> 11) * (1.0 / 9007199254740992.0); }

double Philox::normal() {
  double u1 = uniform_double();
  double u2 = uniform_double();
  if (u1 < 1e-300) u1 = 1e-300;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

int64_t Philox::integer(int64_t lo, int64_t hi) {
  if (hi <= lo) return lo;
  const uint64_t range = static_cast<uint64_t>(hi - lo) + 1;  // 0 means the full 2^64
  if (range == 0) return static_cast<int64_t>(next_u64());
  // Reject the lowest 2^64 mod range values so the rest split evenly.
  const uint64_t threshold = (0 - range) % range;
  uint64_t r;
  do {
    r = next_u64();
  } while (r < threshold);
  return lo + static_cast<int64_t>(r % range);
}

double Philox::gamma(double shape) {
  if (shape < 1.0) {
    // Boost to shape + 1, then scale by U^(1/shape) (Marsaglia-Tsang's note).
    double u = uniform_double();
    if (u < 1e-300) u = 1e-300;
    return gamma(shape + 1.0) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0, c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    double u = uniform_double();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

double Philox::beta(double a, double b) {
  double x = gamma(a), y = gamma(b);
  return x / (x + y);
}

}  // namespace vt
