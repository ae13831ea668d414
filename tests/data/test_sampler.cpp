#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "data_pipeline/sampler.h"

namespace vt {
namespace {

TEST(Sampler, ShuffleIsSeededPermutation) {
  const auto a = shuffled_indices(1000, 3, 0), b = shuffled_indices(1000, 3, 0), c = shuffled_indices(1000, 3, 1);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  auto s = a;
  std::sort(s.begin(), s.end());
  for (int64_t i = 0; i < 1000; ++i) ASSERT_EQ(s[i], i);
  // Position of element 0 is uniform: its mean over epochs is about (n-1)/2.
  double mean = 0;
  for (int e = 0; e < 400; ++e) {
    const auto p = shuffled_indices(50, 1, e);
    mean += std::find(p.begin(), p.end(), 0) - p.begin();
  }
  EXPECT_NEAR(mean / 400, 24.5, 2.5);
}

TEST(Sampler, TrainShardingCoversEverySample) {
  for (int64_t n : {1, 7, 10, 101}) {
    for (int world = 1; world <= 4; ++world) {
      std::set<int64_t> seen, draws;
      for (int r = 0; r < world; ++r) {
        const EpochOrder o = train_order(n, 5, 2, r, world);
        EXPECT_EQ(int64_t(o.size()), (n + world - 1) / world) << n << " " << world;
        seen.insert(o.indices.begin(), o.indices.end());
        for (int64_t d : o.draw_ids) EXPECT_TRUE(draws.insert(d).second) << "draw id reused";
      }
      EXPECT_EQ(int64_t(seen.size()), n) << "n " << n << " world " << world;
    }
  }
}

TEST(Sampler, EvalCountsEachSampleOnce) {
  for (int64_t n : {1, 9, 10, 50}) {
    for (int world = 1; world <= 4; ++world) {
      std::map<int64_t, int> count;
      for (int r = 0; r < world; ++r)
        for (int64_t i : eval_order(n, r, world).indices) ++count[i];
      ASSERT_EQ(int64_t(count.size()), n);
      for (auto& [i, c] : count) EXPECT_EQ(c, 1) << i;
    }
  }
  EXPECT_THROW(eval_order(10, 4, 4), std::invalid_argument);
}

TEST(Sampler, RepeatedAugmentationCounts) {
  // n = 600, world = 2: each rank keeps floor((600 // 256 * 256) / 2) = 256.
  const int64_t n = 600;
  for (int world : {1, 2, 3, 4}) {
    const int64_t keep = (n / 256 * 256) / world;
    std::map<int64_t, std::vector<int>> ranks_of;
    for (int r = 0; r < world; ++r) {
      const EpochOrder o = ra_order(n, 9, 4, r, world);
      ASSERT_EQ(int64_t(o.size()), keep);
      for (int64_t i : o.indices) ranks_of[i].push_back(r);
    }
    for (auto& [i, rs] : ranks_of) {
      EXPECT_LE(rs.size(), 3u);
      if (world >= 3) {
        // Consecutive copies land on different ranks.
        std::set<int> u(rs.begin(), rs.end());
        EXPECT_EQ(u.size(), rs.size()) << "index " << i << " world " << world;
      }
    }
    // About keep*world/3 distinct images per epoch.
    EXPECT_NEAR(double(ranks_of.size()), keep * world / 3.0, 2.0 + world);
  }
  // The first three entries of the world-1 order are one image, repeated.
  const EpochOrder o = ra_order(n, 9, 4, 0, 1);
  EXPECT_EQ(o.indices[0], o.indices[1]);
  EXPECT_EQ(o.indices[1], o.indices[2]);
  EXPECT_EQ(o.indices[0], shuffled_indices(n, 9, 4)[0]);
  EXPECT_NE(o.draw_ids[0], o.draw_ids[1]);
  try {
    ra_order(200, 1, 0, 0, 2);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos);
  }
  EXPECT_THROW(ra_order(256, 1, 0, 0, 300), std::invalid_argument);
}

}  // namespace
}  // namespace vt
