#include "core/stop_request.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "core/dist.h"
#include "core/dist_watchdog.h"
#include "core/exit_status.h"

namespace vt {

namespace {

// Written by the signal thread, or by the handler on whichever thread
// started before the install took the signal (OpenMPI's progress thread, a
// loader worker), and read by the training thread: an atomic, not a
// volatile sig_atomic_t, which orders a handler only with its own thread
// (ThreadSanitizer: data race between record_stop_signal and
// local_stop_signal). Lock-free, so the handler may use it.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free atomic");

extern "C" void record_stop_signal(int signo) {
  int none = 0;
  g_signal.compare_exchange_strong(none, signo);  // the first signal stays
}

struct Named {
  const char* name;
  int signo;
};
const Named kSignals[] = {{"SIGTERM", SIGTERM}, {"SIGINT", SIGINT},   {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2},
                          {"SIGHUP", SIGHUP},   {"SIGQUIT", SIGQUIT}, {"SIGCONT", SIGCONT}, {"SIGALRM", SIGALRM},
                          {"SIGXCPU", SIGXCPU}};

std::string stop_message(int signo, int64_t step, const std::string& checkpoint) {
  std::string m = "stopped by " + signal_name(signo) + " after step " + std::to_string(step) + ": checkpoint " +
                  (checkpoint.empty() ? std::string("(none)") : checkpoint) +
                  "; `resume: auto` continues from it (exit status " + std::to_string(kExitStopped) + ")";
  const char* job = std::getenv("SLURM_JOB_ID");
  if (job && *job)
    m += "; Slurm job " + std::string(job) + ": requeue it with `scontrol requeue " + job +
         "` (automatic with `#SBATCH --requeue` on preemption)";
  return m;
}

}  // namespace

void install_stop_signals(const std::vector<int>& signals) {
  static bool installed = false;
  if (installed || signals.empty()) return;
  installed = true;
  sigset_t set;
  sigemptyset(&set);
  for (int s : signals) {
    if (s < 1 || s > 64 || s == SIGKILL || s == SIGSTOP)
      throw std::invalid_argument("install_stop_signals: signal " + std::to_string(s) + " cannot be handled");
    sigaddset(&set, s);
  }
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = record_stop_signal;
  sigfillset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int s : signals) sigaction(s, &sa, nullptr);
  ::signal(SIGXFSZ, SIG_IGN);
  // The calling thread (the one that trains) and the threads it starts
  // later do not take the signals: a thread of its own waits for them, so
  // no computation is interrupted. Threads started earlier (data loaders)
  // may still take one; the handler above records it the same way.
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set] {
    for (;;) {
      int signo = 0;
      if (sigwait(&set, &signo) == 0) record_stop_signal(signo);
    }
  }).detach();
}

int local_stop_signal() { return g_signal.load(); }

void clear_stop_signal() { g_signal.store(0); }

int agreed_stop_signal() {
  const int local = g_signal.load();
  const Dist& d = dist();
  if (d.world() == 1) return local;
  // Per signal number, how many ranks received it.
  int64_t counts[65] = {0};
  if (local > 0 && local <= 64) counts[local] = 1;
  CollectiveWatch w("MPI_Allreduce of the stop-request agreement", 65, "int64s");
  d.allreduce_sum(counts, 65);
  for (int s = 1; s <= 64; ++s)
    if (counts[s] > 0) return s;
  return 0;
}

std::string signal_name(int signo) {
  for (const Named& n : kSignals)
    if (n.signo == signo) return n.name;
  return "signal " + std::to_string(signo);
}

int signal_number(const std::string& name) {
  std::string u;
  for (char c : name) u += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (u.rfind("SIG", 0) != 0) u = "SIG" + u;
  for (const Named& n : kSignals)
    if (u == n.name) return n.signo;
  return -1;
}

StopRequested::StopRequested(int signo, int64_t step, const std::string& checkpoint)
    : std::runtime_error(stop_message(signo, step, checkpoint)), signo_(signo), step_(step) {}

StopRequested::StopRequested(int signo, const std::string& message)
    : std::runtime_error(message), signo_(signo), step_(-1) {}

}  // namespace vt
