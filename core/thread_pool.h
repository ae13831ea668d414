// Fixed-size pool of worker threads for host-side work (data loading,
// evaluation, I/O). Numeric kernels use OpenMP instead.
//
// submit() returns a std::future; an exception thrown by the task is
// rethrown by future::get(). parallel_for() blocks until every index is done
// and rethrows the first exception a body threw (the remaining indices still
// run, so the work is never half-claimed). The calling thread takes part in
// parallel_for, so calling it from inside a pool task cannot deadlock.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <queue>
#include <thread>
#include <type_traits>
#include <vector>

namespace vt {

class ThreadPool {
 public:
  // threads <= 0: std::thread::hardware_concurrency() (at least 1).
  explicit ThreadPool(int threads = 0);
  // Runs every task already submitted, then joins the workers.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()); }

  template <typename F>
  auto submit(F&& fn) -> std::future<std::invoke_result_t<std::decay_t<F>>> {
    using R = std::invoke_result_t<std::decay_t<F>>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(fn));
    std::future<R> fut = task->get_future();
    enqueue([task] { (*task)(); });
    return fut;
  }

  // fn(i) for every i in [begin, end), in chunks of `grain` indices
  // (0: about 4 chunks per thread).
  void parallel_for(int64_t begin, int64_t end, const std::function<void(int64_t)>& fn, int64_t grain = 0);

 private:
  void enqueue(std::function<void()> job);
  void worker_loop();

  std::vector<std::thread> workers_;
  std::queue<std::function<void()>> queue_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
};

}  // namespace vt
