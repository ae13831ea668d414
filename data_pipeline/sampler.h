// Epoch orders: which dataset indices a rank reads in an epoch, and in what
// order. Every order is a pure function of (seed, epoch, rank, world), so a
// resumed or re-sharded run sees the same data.
//
// Each entry also carries a draw id, unique within the epoch across all
// ranks (its position in the global, pre-sharding list). Augmentation keys
// use it instead of the dataset index so that the repeated copies of one
// image (RASampler) get different augmentations even on the same rank.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace vt {

struct EpochOrder {
  std::vector<int64_t> indices;   // dataset indices, in reading order
  std::vector<int64_t> draw_ids;  // same length; unique within the epoch
  size_t size() const { return indices.size(); }
};

// Philox purpose tags (first argument of philox_stream) used by the data
// pipeline; distinct from other layers' tags by their high bits.
enum : uint64_t {
  kPurposeShuffle = 0xDA7A0001,
  kPurposeAugment = 0xDA7A0002,
  kPurposeMixup = 0xDA7A0003,
};

// A uniformly random permutation of 0..n-1 (Fisher-Yates) from (seed, epoch).
std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, uint64_t epoch);

// torch DistributedSampler: the (shuffled or natural) order padded by
// wrapping around to a multiple of `world`, rank r taking entries
// r, r + world, ...; every rank gets ceil(n / world) entries and together
// they cover every sample. world = 1 gives the whole order.
EpochOrder train_order(int64_t n, uint64_t seed, uint64_t epoch, int rank, int world, bool shuffle = true);

// Evaluation sharding: natural order, rank r takes r, r + world, ... < n,
// no padding, so every sample is counted exactly once for any world size.
EpochOrder eval_order(int64_t n, int rank, int world);

// DeiT's RASampler (docs/recipes.md §6): shuffle from (seed, epoch), repeat each
// index `repeats` times consecutively, pad by wrapping to a multiple of
// world, take r::world, keep floor((n // 256 * 256) / world) entries.
// Throws std::invalid_argument when that count is 0 (n too small for world).
EpochOrder ra_order(int64_t n, uint64_t seed, uint64_t epoch, int rank, int world, int repeats = 3);

}  // namespace vt
