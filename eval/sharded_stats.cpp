#include "eval/sharded_stats.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "core/dist.h"

namespace vt {

ShardedStats::ShardedStats(int64_t n, int64_t batch, int64_t dim)
    : n_(n), batch_(batch), dim_(dim), direct_(std::max<int64_t>(1, dim)) {
  if (n < 0 || batch < 1 || dim < 1)
    throw std::invalid_argument("ShardedStats: n " + std::to_string(n) + ", batch " + std::to_string(batch) +
                                ", dim " + std::to_string(dim) + " (need n >= 0, batch >= 1, dim >= 1)");
  const int64_t W = dist().world(), r = dist().rank();
  const int64_t K = (n + batch - 1) / batch;
  begin_ = std::min(n, K * r / W * batch);
  end_ = std::min(n, K * (r + 1) / W * batch);
}

void ShardedStats::add(const Tensor& feats) {
  if (feats.dim() != 2 || feats.size(1) != dim_ || feats.dtype() != DType::F32 || !feats.is_contiguous())
    throw std::invalid_argument("ShardedStats::add: features must be contiguous F32 [b, " + std::to_string(dim_) +
                                "], got " + feats.str());
  const int64_t b = feats.size(0);
  if (added_ + b > end_ - begin_)
    throw std::logic_error("ShardedStats::add: more features than this rank's " + std::to_string(end_ - begin_) +
                           " images");
  added_ += b;
  if (dist().world() == 1) {
    direct_.add(feats);
    return;
  }
  const float* f = feats.f32();
  shard_.insert(shard_.end(), f, f + b * dim_);
}

GaussianStats ShardedStats::finish() {
  if (added_ != end_ - begin_)
    throw std::logic_error("ShardedStats::finish: " + std::to_string(added_) + " features added for " +
                           std::to_string(end_ - begin_) + " images");
  if (dist().world() == 1) return direct_.finish();
  const std::vector<unsigned char> all = dist().gather_bytes(shard_.data(), shard_.size() * sizeof(float), 0);
  shard_.clear();
  shard_.shrink_to_fit();
  if (!dist().is_root()) return GaussianStats{};
  if (all.size() != static_cast<size_t>(n_ * dim_) * sizeof(float))
    throw std::logic_error("ShardedStats::finish: gathered " + std::to_string(all.size()) + " bytes for " +
                           std::to_string(n_) + " x " + std::to_string(dim_) + " features");
  StatsAccumulator acc(dim_);
  std::vector<float> chunk;
  for (int64_t s = 0; s < n_; s += batch_) {  // the one-process batches, in order
    const int64_t b = std::min(batch_, n_ - s);
    chunk.resize(static_cast<size_t>(b * dim_));
    std::memcpy(chunk.data(), all.data() + static_cast<size_t>(s * dim_) * sizeof(float), chunk.size() * sizeof(float));
    acc.add(chunk.data(), b);
  }
  return acc.finish();
}

}  // namespace vt
