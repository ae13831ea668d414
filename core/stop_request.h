// Stop requests: the signals a cluster sends before it ends a job (Slurm
// preemption and time limits: SIGTERM, or the one chosen with
// `#SBATCH --signal=USR1@120`; an interactive Ctrl-C: SIGINT).
//
// install_stop_signals() makes each listed signal only record a request
// (the handler stores the signal number; nothing else runs in it), so the
// program decides where to stop: the training loop (train/loop.h) finishes
// the step in flight, agrees with the other ranks on that step, writes a
// checkpoint and throws StopRequested, and the program exits with
// kExitStopped (core/exit_status.h). Further signals while that happens are
// recorded again and change nothing, so they cannot corrupt the checkpoint
// being written. SIGKILL cannot be caught; the atomic checkpoint writes
// (core/checkpoint_dir.h) cover it.
//
// It also ignores SIGXFSZ, so a write beyond a file-size limit
// (RLIMIT_FSIZE, `ulimit -f`) fails with EFBIG, reported like a full disk,
// instead of killing the process.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace vt {

// Installs the recording handler for each signal number and blocks them in
// the calling thread (and so in the threads it starts later), where a thread
// of their own waits for them (sigwait): computation is never interrupted.
// Process-wide and once: later calls do nothing. Call it from the thread
// that trains. Throws std::invalid_argument for SIGKILL, SIGSTOP or a
// number outside 1..64.
void install_stop_signals(const std::vector<int>& signals);

// The signal this process received first since install (0: none).
int local_stop_signal();
// Collective with several ranks (core/dist.h; every rank calls it at the
// same point, once per step): the stop request of the job, the same on
// every rank: the smallest signal number any rank received, 0 when none
// did. One process: local_stop_signal().
int agreed_stop_signal();

// "SIGTERM", "SIGUSR1", ...; "signal N" for others.
std::string signal_name(int signo);
// The number of "SIGTERM", "TERM", "sigterm", "USR1", ... ; -1 when unknown.
int signal_number(const std::string& name);

// Test hook: forget a recorded request.
void clear_stop_signal();

// Thrown by the training loop once the stop checkpoint is written; what()
// is the message for the log (signal, step, checkpoint, how to resume).
// `dittrain sample` throws it too once its finished chunks are safe
// (diffusion/dit_sample_files.h), with its own message (step() is -1).
// Either way the program exits with kExitStopped.
class StopRequested : public std::runtime_error {
 public:
  StopRequested(int signo, int64_t step, const std::string& checkpoint);
  StopRequested(int signo, const std::string& message);
  int signo() const { return signo_; }
  int64_t step() const { return step_; }

 private:
  int signo_;
  int64_t step_;
};

}  // namespace vt
