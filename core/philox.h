// Philox 4x32-10 counter-based generator (Salmon, Moraes, Dror, Shaw,
// "Parallel Random Numbers: As Easy as 1, 2, 3", SC'11; the Random123 library).
//
// vtrain keys every random draw by (seed, stream, counter): `stream` names a
// purpose and its index (e.g. a sample index and the epoch, or a step and a
// layer), so draws do not depend on thread count, device or resume point.
// The block function itself lives in core/philox_block.h, callable from CUDA
// kernels too, so device draws equal host draws bit for bit.
#pragma once
#include <array>
#include <cstdint>

namespace vt {

using PhiloxCounter = std::array<uint32_t, 4>;
using PhiloxKey = std::array<uint32_t, 2>;

// Where a vt::Philox stands: the next draw is word `lane` (0..3) of block
// `block` of the generator (seed, stream). Plain data, so a draw sequence
// can be recorded on the host and replayed elsewhere (data_pipeline's
// augmentation plans record where RandomErasing's normals start).
struct PhiloxPosition {
  uint64_t seed = 0, stream = 0, block = 0;
  uint32_t lane = 0;
  bool operator==(const PhiloxPosition& o) const {
    return seed == o.seed && stream == o.stream && block == o.block && lane == o.lane;
  }
};

// One 10-round Philox4x32 block: the raw bijection, as in Random123.
PhiloxCounter philox4x32_10(PhiloxCounter ctr, PhiloxKey key);

// Combines purpose tags into one 64-bit stream id (splitmix64 mixing), e.g.
// philox_stream(kPurposeAugment, epoch, sample_index).
uint64_t philox_stream(uint64_t a, uint64_t b = 0, uint64_t c = 0);

// Sequential generator over one (seed, stream): key = seed, counter =
// (block lo, block hi, stream lo, stream hi), block incrementing from 0.
class Philox {
 public:
  Philox(uint64_t seed, uint64_t stream, uint64_t first_block = 0);

  uint32_t next_u32();
  uint64_t next_u64();
  // Uniform in [0, 1) with 24 (float) / 53 (double) random bits.
  float uniform();
  double uniform_double();
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform_double(); }
  // Standard normal (Box-Muller on two doubles).
  double normal();
  double normal(double mean, double std) { return mean + std * normal(); }
  bool bernoulli(double p) { return uniform_double() < p; }
  // Integer uniform in [lo, hi] (inclusive), unbiased (rejection sampling).
  int64_t integer(int64_t lo, int64_t hi);
  // Gamma(shape, 1) (Marsaglia-Tsang) and Beta(a, b) as gamma ratios.
  double gamma(double shape);
  double beta(double a, double b);

  // Position, for checkpointing: the next block index and the buffered lane.
  uint64_t block() const { return block_; }
  // The position of the next draw, and a generator that continues from one
  // (at(g.position()) draws exactly what g draws next).
  PhiloxPosition position() const;
  static Philox at(const PhiloxPosition& p);

 private:
  void refill();
  PhiloxKey key_;
  uint64_t stream_;
  uint64_t block_;
  PhiloxCounter buf_{};
  int lane_ = 4;
};

}  // namespace vt
