#include "core/philox.h"

#include "core/philox_block.h"

#include <cmath>

namespace vt {

PhiloxCounter philox4x32_10(PhiloxCounter c, PhiloxKey k) {
  const PhiloxWords r = philox4x32_10_words(PhiloxWords{{c[0], c[1], c[2], c[3]}}, k[0], k[1]);
  return {r.w[0], r.w[1], r.w[2], r.w[3]};
}

uint64_t philox_stream(uint64_t a, uint64_t b, uint64_t c) {
  return philox_stream_mix(a, b, c);
}

Philox::Philox(uint64_t seed, uint64_t stream, uint64_t first_block)
    : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)}, stream_(stream), block_(first_block) {}

PhiloxPosition Philox::position() const {
  PhiloxPosition p;
  p.seed = static_cast<uint64_t>(key_[0]) | static_cast<uint64_t>(key_[1]) << 32;
  p.stream = stream_;
  // A partly used buffer holds block block_ - 1; an empty one (lane 4) none.
  if (lane_ >= 4) p.block = block_, p.lane = 0;
  else p.block = block_ - 1, p.lane = static_cast<uint32_t>(lane_);
  return p;
}

Philox Philox::at(const PhiloxPosition& p) {
  Philox g(p.seed, p.stream, p.block);
  if (p.lane > 0) {
    g.refill();
    g.lane_ = static_cast<int>(p.lane);
  }
  return g;
}

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

double Philox::uniform_double() {
  const uint32_t hi = next_u32();
  return philox_uniform_double(hi, next_u32());
}

double Philox::normal() {
  const double u1 = uniform_double();
  return philox_box_muller(u1, uniform_double());
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
