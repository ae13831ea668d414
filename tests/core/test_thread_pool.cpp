#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>

#include "core/thread_pool.h"

using namespace vt;

TEST(ThreadPool, SubmitReturnsResults) {
  ThreadPool pool(3);
  EXPECT_EQ(pool.size(), 3);
  std::vector<std::future<int64_t>> fs;
  for (int64_t i = 0; i < 50; ++i) fs.push_back(pool.submit([i] { return i * i; }));
  for (int64_t i = 0; i < 50; ++i) EXPECT_EQ(fs[i].get(), i * i);
  auto v = pool.submit([] {});
  v.get();
}

TEST(ThreadPool, SubmitPropagatesException) {
  ThreadPool pool(2);
  auto f = pool.submit([]() -> int { throw std::runtime_error("task failed: 42"); });
  try {
    f.get();
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "task failed: 42");
  }
  EXPECT_EQ(pool.submit([] { return 7; }).get(), 7);  // pool still works
}

TEST(ThreadPool, ParallelForCoversEachIndexOnce) {
  ThreadPool pool(4);
  for (int64_t grain : {0, 1, 7, 1000}) {
    std::vector<std::atomic<int>> hits(1001);
    pool.parallel_for(-500, 501, [&](int64_t i) { hits[i + 500]++; }, grain);
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  }
  pool.parallel_for(5, 5, [](int64_t) { FAIL(); });  // empty range
}

TEST(ThreadPool, ParallelForRethrowsAndFinishesTheRest) {
  ThreadPool pool(3);
  std::atomic<int> ran{0};
  try {
    pool.parallel_for(0, 100, [&](int64_t i) {
      ran++;
      if (i == 37) throw std::invalid_argument("bad index 37");
    }, 1);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "bad index 37");
  }
  EXPECT_EQ(ran.load(), 100);
}

TEST(ThreadPool, NestedParallelForDoesNotDeadlock) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  std::vector<std::future<void>> fs;
  for (int t = 0; t < 4; ++t)
    fs.push_back(pool.submit([&] { pool.parallel_for(0, 100, [&](int64_t i) { sum += i; }); }));
  for (auto& f : fs) f.get();
  EXPECT_EQ(sum.load(), 4 * 4950);
}

TEST(ThreadPool, DestructorRunsQueuedTasks) {
  std::atomic<int> done{0};
  {
    ThreadPool pool(1);
    for (int i = 0; i < 20; ++i) pool.submit([&] { done++; });
  }
  EXPECT_EQ(done.load(), 20);
}
