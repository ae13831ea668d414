// Feature statistics (eval/frechet.h) of n images split over data-parallel
// ranks (core/dist.h) for `veval fid` / `veval stats` under mpirun.
//
// The one-process computation runs the network on batches [k*batch,
// (k+1)*batch) and adds each batch's features to a StatsAccumulator in
// order. Here rank r runs a contiguous run of whole batches (batches
// floor(K r / W) .. floor(K (r+1) / W) - 1 of the K = ceil(n / batch)), so
// every image is embedded in the same batch as in one process; the features
// are gathered on rank 0 (MPI_Gatherv, rank order = image order), which adds
// them batch by batch as one process does: the same float64 sums, in the
// same order, hence the same mean and covariance.
// Memory on rank 0: n x D floats (50 000 Inception features: 410 MB).
// In a single process the features go straight into the accumulator.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "eval/frechet.h"

namespace vt {

class ShardedStats {
 public:
  // n >= 0 images, batch >= 1, dim >= 1 (std::invalid_argument otherwise).
  ShardedStats(int64_t n, int64_t batch, int64_t dim);

  // This rank's images [begin(), end()): whole batches of the one-process
  // run (end() may be n). Empty when there are fewer batches than ranks.
  int64_t begin() const { return begin_; }
  int64_t end() const { return end_; }

  // The features [b, D] (F32, contiguous CPU) of the next batch of this
  // rank's range, in order.
  void add(const Tensor& feats);

  // Collective. Rank 0: the statistics of all n images (StatsAccumulator::
  // finish: throws for fewer than 2); other ranks: empty stats (count 0).
  // Throws std::logic_error when this rank did not add exactly its range.
  GaussianStats finish();

 private:
  int64_t n_, batch_, dim_, begin_ = 0, end_ = 0, added_ = 0;
  StatsAccumulator direct_;    // single process
  std::vector<float> shard_;   // several ranks: this rank's features
};

}  // namespace vt
