#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <stdexcept>

namespace vt {

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(threads);
  for (int i = 0; i < threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::enqueue(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    if (stop_) throw std::runtime_error("ThreadPool: submit after shutdown");
    queue_.push(std::move(job));
  }
  cv_.notify_one();
}

void ThreadPool::worker_loop() {
  while (true) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lk(mu_);
      cv_.wait(lk, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop_ and drained
      job = std::move(queue_.front());
      queue_.pop();
    }
    job();
  }
}

namespace {

// Shared with helper tasks that may start after parallel_for has returned
// (when every chunk was already claimed); they then touch only this state.
struct ForState {
  std::atomic<int64_t> next{0};
  int64_t begin = 0, end = 0, grain = 1;
  const std::function<void(int64_t)>* fn = nullptr;
  std::mutex mu;
  std::condition_variable cv;
  int64_t done = 0;  // indices finished, guarded by mu
  std::exception_ptr error;

  void run() {
    while (true) {
      int64_t lo = begin + next.fetch_add(grain);
      if (lo >= end) return;
      int64_t hi = std::min(end, lo + grain);
      std::exception_ptr err;
      try {
        for (int64_t i = lo; i < hi; ++i) (*fn)(i);
      } catch (...) {
        err = std::current_exception();
      }
      std::lock_guard<std::mutex> lk(mu);
      if (err && !error) error = err;
      done += hi - lo;
      if (done == end - begin) cv.notify_all();
    }
  }
};

}  // namespace

void ThreadPool::parallel_for(int64_t begin, int64_t end, const std::function<void(int64_t)>& fn, int64_t grain) {
  if (end <= begin) return;
  const int64_t n = end - begin;
  if (grain <= 0) grain = std::max<int64_t>(1, n / (4 * static_cast<int64_t>(size())));
  auto st = std::make_shared<ForState>();
  st->begin = begin;
  st->end = end;
  st->grain = grain;
  st->fn = &fn;
  const int64_t chunks = (n + grain - 1) / grain;
  const int helpers = static_cast<int>(std::min<int64_t>(size(), chunks - 1));
  for (int h = 0; h < helpers; ++h) enqueue([st] { st->run(); });
  st->run();
  std::unique_lock<std::mutex> lk(st->mu);
  st->cv.wait(lk, [&] { return st->done == n; });
  if (st->error) std::rethrow_exception(st->error);
}

}  // namespace vt
