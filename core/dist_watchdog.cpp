#include "core/dist_watchdog.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>

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

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

[[noreturn]] void time_out(double timeout) {
  const Dist& d = dist();
  char what[256];
  std::snprintf(what, sizeof what, "%s (%zu %s)", g_op.load() ? g_op.load() : "collective", g_count.load(),
                g_type.load() ? g_type.load() : "values");
  const std::string msg = "rank " + std::to_string(d.rank()) + " of " + std::to_string(d.world()) + " (host " +
                          d.host() + "): distributed timeout: " + what + " at step " + std::to_string(g_step.load()) +
                          " did not complete within " + std::to_string(static_cast<int64_t>(timeout)) +
                          " s (dist.timeout_s); a rank is dead or stuck; aborting the job (exit status " +
                          std::to_string(kExitDistTimeout) + ")";
  std::fprintf(stderr, "%s\n", msg.c_str());
  try {
    log_file_only(spdlog::level::err, msg);
  } catch (...) {
  }
  d.abort(kExitDistTimeout);
}

void watch() {
  for (;;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const double timeout = g_timeout.load();
    const int64_t since = g_since.load();
    if (timeout > 0 && since != 0 && static_cast<double>(now_ns() - since) * 1e-9 > timeout) time_out(timeout);
  }
}

}  // namespace

void dist_set_timeout(double seconds) {
  g_timeout.store(seconds > 0 ? seconds : 0);
  if (seconds > 0 && dist().world() > 1) std::call_once(g_thread_once, [] { std::thread(watch).detach(); });
}

double dist_timeout() { return g_timeout.load(); }

void dist_set_step(int64_t step) { g_step.store(step); }

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
