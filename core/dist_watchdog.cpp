#include "core/dist_watchdog.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/dist.h"
#include "core/exit_status.h"
#include "core/log.h"

namespace vt {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<double> g_timeout{0};
std::atomic<int64_t> g_step{0};
// The armed collective: its start (ns since the clock's epoch; 0: none).
std::atomic<int64_t> g_since{0};
std::atomic<const char*> g_op{nullptr};
std::atomic<const char*> g_type{nullptr};
std::atomic<size_t> g_count{0};
std::once_flag g_thread_once;
// The registered device-side sources; held while one is polled.
std::mutex g_async_mu;
std::vector<AsyncCollectives*> g_async;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Runs `source->abort()` (ncclCommAbort) on a thread of its own and waits
// for it at most kAbortDeadlineSeconds. ncclCommAbort is known to hang
// (stuck in commReclaim/commFree joining NCCL's proxy threads:
// NVIDIA/nccl#863, #992, #1777; waiting for the other ranks to abort:
// pytorch/pytorch#119215), and PyTorch waits for it with a timeout for
// that reason (ProcessGroupNCCL::abort, waitForFutureOrTimeout:
// pytorch/pytorch#149153): a rank that hangs in the abort would keep the
// job alive and never report its exit status. The thread is detached: on a timeout it is left running
// inside NCCL and the process ends around it; it owns its state through a
// shared_ptr so whichever of the two finishes last frees it.
void abort_within_deadline(AsyncCollectives* source) {
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
  };
  auto state = std::make_shared<State>();
  std::thread([source, state] {
    source->abort();
    std::lock_guard<std::mutex> lock(state->mu);
    state->done = true;
    state->cv.notify_all();
  }).detach();
  std::unique_lock<std::mutex> lock(state->mu);
  if (state->cv.wait_for(lock, std::chrono::duration<double>(kAbortDeadlineSeconds), [&] { return state->done; }))
    return;
  const Dist& d = dist();
  const std::string msg = "rank " + std::to_string(d.rank()) + ": ncclCommAbort did not return within " +
                          std::to_string(static_cast<int>(kAbortDeadlineSeconds)) +
                          " s; ending the job without waiting for it";
  std::fprintf(stderr, "%s\n", msg.c_str());
  try {
    log_file_only(spdlog::level::err, msg);
  } catch (...) {
  }
}

// Writes "rank R of W (host H): <what>; aborting the job (exit status
// <status>)" to stderr and the run's log, then aborts `source`'s
// communicator (if any; bounded by kAbortDeadlineSeconds), then ends the job
// with `status`. The message comes first: the abort may hang or crash inside
// NCCL, and the operator must still learn which rank, step and collective
// ended the job.
[[noreturn]] void end_job(const std::string& what, int status, AsyncCollectives* source = nullptr) {
  const Dist& d = dist();
  const std::string msg = "rank " + std::to_string(d.rank()) + " of " + std::to_string(d.world()) + " (host " +
                          d.host() + "): " + what + "; aborting the job (exit status " + std::to_string(status) + ")";
  std::fprintf(stderr, "%s\n", msg.c_str());
  try {
    log_file_only(spdlog::level::err, msg);
  } catch (...) {
  }
  if (source) abort_within_deadline(source);
  // Backstop for MPI_Abort itself not returning (a launcher that cannot be
  // reached): std::_Exit ends every thread at once without running atexit
  // handlers or static destructors, which would otherwise run while the
  // abort thread may still be inside NCCL and the main thread inside a
  // collective (destroying the logger, CUDA or MPI state under them).
  // _Exit is also async-signal-safe, so nothing it does can deadlock on a
  // lock a stuck thread holds (stdio's and spdlog's included).
  std::thread([status] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kAbortDeadlineSeconds));
    std::_Exit(status);
  }).detach();
  d.abort(status);
}

// "<op> (<count> <type>) at step S": the collective, as messages name it.
std::string named(const std::string& op, size_t count, const char* type) {
  return op + " (" + std::to_string(count) + " " + type + ") at step " + std::to_string(g_step.load());
}

[[noreturn]] void time_out(const std::string& op, size_t count, const char* type, double timeout,
                           AsyncCollectives* source = nullptr) {
  end_job("distributed timeout: " + named(op, count, type) + " did not complete within " +
              std::to_string(static_cast<int64_t>(timeout)) + " s (dist.timeout_s); a rank is dead or stuck",
          kExitDistTimeout, source);
}

void poll_async(double timeout) {
  std::lock_guard<std::mutex> lock(g_async_mu);
  for (AsyncCollectives* src : g_async) {
    AsyncCollectives::Running r;
    if (!src->oldest_running(&r)) continue;
    // g_async_mu stays held from here until the process ends, so the
    // source (and its communicator) cannot be destroyed under the abort:
    // its destructor waits in dist_unwatch_async.
    if (!r.error.empty()) end_job(named(r.op, r.count, r.type) + " failed: " + r.error, kExitError, src);
    if (r.seconds > timeout) time_out(r.op, r.count, r.type, timeout, src);
  }
}

void watch() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double timeout = g_timeout.load();
    const int64_t since = g_since.load();
    if (timeout > 0 && since != 0 && static_cast<double>(now_ns() - since) * 1e-9 > timeout)
      time_out(g_op.load() ? g_op.load() : "collective", g_count.load(), g_type.load() ? g_type.load() : "values",
               timeout);
    if (timeout > 0) poll_async(timeout);
  }
}

}  // namespace

void dist_set_timeout(double seconds) {
  g_timeout.store(seconds > 0 ? seconds : 0);
  if (seconds > 0 && dist().world() > 1) std::call_once(g_thread_once, [] { std::thread(watch).detach(); });
}

double dist_timeout() { return g_timeout.load(); }

void dist_set_step(int64_t step) { g_step.store(step); }

void dist_watch_async(AsyncCollectives* source) {
  std::lock_guard<std::mutex> lock(g_async_mu);
  g_async.push_back(source);
}

void dist_unwatch_async(AsyncCollectives* source) {
  std::lock_guard<std::mutex> lock(g_async_mu);
  for (size_t i = 0; i < g_async.size(); ++i)
    if (g_async[i] == source) {
      g_async.erase(g_async.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
}

CollectiveWatch::CollectiveWatch(const char* op, size_t count, const char* type, bool timed) {
  if (!timed || g_timeout.load() <= 0 || g_since.load() != 0) return;  // (inside an outer watch: its name stays)
  g_op.store(op), g_count.store(count), g_type.store(type);
  g_since.store(now_ns());
  armed_ = true;
}

CollectiveWatch::~CollectiveWatch() {
  if (armed_) g_since.store(0);
}

}  // namespace vt
