#include "data_pipeline/sampler.h"

#include <numeric>
#include <stdexcept>
#include <string>

#include "core/philox.h"

namespace vt {

namespace {

void check_rank(const char* fn, int64_t n, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world)
    throw std::invalid_argument(std::string(fn) + ": rank " + std::to_string(rank) + " not in [0, world=" +
                                std::to_string(world) + ")");
  if (n <= 0) throw std::invalid_argument(std::string(fn) + ": dataset is empty (n = " + std::to_string(n) + ")");
}

// Strided shard of `global` after wrap-around padding to `total` entries.
EpochOrder shard(const std::vector<int64_t>& global, int64_t total, int rank, int world, int64_t keep) {
  EpochOrder o;
  const int64_t g = static_cast<int64_t>(global.size());
  for (int64_t pos = rank; pos < total && static_cast<int64_t>(o.indices.size()) < keep; pos += world) {
    o.indices.push_back(global[pos % g]);
    o.draw_ids.push_back(pos);
  }
  return o;
}

}  // namespace

std::vector<int64_t> shuffled_indices(int64_t n, uint64_t seed, uint64_t epoch) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  Philox rng(seed, philox_stream(kPurposeShuffle, epoch));
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[i], p[rng.integer(0, i)]);
  return p;
}

EpochOrder train_order(int64_t n, uint64_t seed, uint64_t epoch, int rank, int world, bool shuffle) {
  check_rank("train_order", n, rank, world);
  std::vector<int64_t> global;
  if (shuffle) {
    global = shuffled_indices(n, seed, epoch);
  } else {
    global.resize(static_cast<size_t>(n));
    std::iota(global.begin(), global.end(), 0);
  }
  const int64_t per_rank = (n + world - 1) / world;
  return shard(global, per_rank * world, rank, world, per_rank);
}

EpochOrder eval_order(int64_t n, int rank, int world) {
  check_rank("eval_order", n, rank, world);
  EpochOrder o;
  for (int64_t i = rank; i < n; i += world) {
    o.indices.push_back(i);
    o.draw_ids.push_back(i);
  }
  return o;
}

EpochOrder ra_order(int64_t n, uint64_t seed, uint64_t epoch, int rank, int world, int repeats) {
  check_rank("ra_order", n, rank, world);
  if (repeats < 1) throw std::invalid_argument("ra_order: repeats must be >= 1, got " + std::to_string(repeats));
  const int64_t keep = (n / 256 * 256) / world;
  if (keep == 0)
    throw std::invalid_argument("ra_order: an epoch would be empty: floor((n // 256 * 256) / world) = 0 for n = " +
                                std::to_string(n) + ", world = " + std::to_string(world) +
                                " (repeated augmentation keeps n // 256 * 256 samples split over the ranks; use "
                                "the plain shuffle sampler for small datasets)");
  const std::vector<int64_t> perm = shuffled_indices(n, seed, epoch);
  std::vector<int64_t> rep;
  rep.reserve(static_cast<size_t>(n) * repeats);
  for (int64_t v : perm)
    for (int k = 0; k < repeats; ++k) rep.push_back(v);
  const int64_t per_rank = (n * repeats + world - 1) / world;
  return shard(rep, per_rank * world, rank, world, keep);
}

}  // namespace vt
