// The collective timeout of core/dist.h (dist.timeout_s), in the spirit of
// PyTorch's NCCL watchdog: each Dist collective arms a CollectiveWatch for
// as long as it runs; a watchdog thread (started by dist_set_timeout with
// several ranks) checks the armed collective every 100 ms, and when one has
// run longer than the timeout it writes
//   "rank R of W (host H): distributed timeout: <operation> at step S did
//    not complete within T s (dist.timeout_s); aborting the job"
// to stderr and to the run's log, and ends the job with exit status
// kExitDistTimeout (core/exit_status.h) through MPI_Abort, which also ends
// the ranks that are stuck elsewhere (a sleeping or dead peer). Internal to
// core/dist.cpp, the training loop (which names the step) and the NCCL
// gradient all-reduce.
//
// Collectives a device runs while the host goes on (NCCL's on its stream,
// train/grad_allreduce_nccl.h) are watched through an AsyncCollectives
// source the watchdog polls, as PyTorch's NCCL watchdog polls its work
// items: when the oldest one still running has run longer than the timeout,
// the watchdog writes the message above with the source's name of the
// collective, then aborts the source's communicator (ncclCommAbort), then
// ends the job as above. When the source reports an asynchronous error
// instead (ncclCommGetAsyncError), it writes
//   "rank R of W (host H): <operation> at step S failed: <error>; aborting
//    the job (exit status 1)",
// aborts the communicator and ends the job with kExitError. The message
// always comes before the abort, which can hang or crash inside NCCL; the
// abort runs on a thread of its own, and when it has not returned within
// kAbortDeadlineSeconds the job ends without it, with the same status
// (after "rank R: ncclCommAbort did not return within D s; ending the job
// without waiting for it" on stderr and in the log).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace vt {

// How long the watchdog waits for ncclCommAbort before it ends the job
// anyway (and, again, for MPI_Abort before the process exits on its own).
// A healthy abort returns in well under a second; a few seconds leave room
// for a loaded node without delaying the job's end noticeably next to
// dist.timeout_s (minutes). A constant, not a setting: the emulator test of
// a hanging abort (ctest emu.nccl_abort_hang_np2, VT_EMU_NCCL_ABORT_HANG in
// tests/cuda/emu/nccl_emu.cpp) waits for it as it is.
inline constexpr double kAbortDeadlineSeconds = 5;

// Seconds a collective may take before the job is aborted; 0 turns the
// watchdog off (the default until a trainer sets dist.timeout_s). Starts the
// watchdog thread once, when several ranks run.
void dist_set_timeout(double seconds);
double dist_timeout();
// The training step named in timeout messages (0: before the first step).
void dist_set_step(int64_t step);

// Arms the watchdog for one collective (`op`, `count` elements of `type`)
// while it lives; `timed` false: never times out (a wait with no bound of
// its own, e.g. for rank 0's checkpoint write). Inside another watch it
// does nothing: a caller names the collective ("MPI_Allreduce of the
// gradients") around Dist's generic watch.
class CollectiveWatch {
 public:
  CollectiveWatch(const char* op, size_t count, const char* type, bool timed = true);
  ~CollectiveWatch();
  CollectiveWatch(const CollectiveWatch&) = delete;
  CollectiveWatch& operator=(const CollectiveWatch&) = delete;

 private:
  bool armed_ = false;
};

// A source of collectives running on a device, polled by the watchdog
// thread every 100 ms (its methods are called from that thread).
class AsyncCollectives {
 public:
  struct Running {
    std::string op;        // e.g. "NCCL all-reduce of gradient bucket 2"
    size_t count = 0;      // elements of `type`
    const char* type = "values";
    double seconds = 0;    // since it was issued
    std::string error;     // non-empty: it failed (the communicator's asynchronous error)
  };
  virtual ~AsyncCollectives() = default;
  // The oldest collective not yet complete; false when none is running.
  virtual bool oldest_running(Running* r) = 0;
  // Aborts the communicator; the job ends right after (within
  // kAbortDeadlineSeconds, whether or not this returns). Called once, on a
  // thread of its own, while the source stays registered (so not
  // destroyed); afterwards the source must issue nothing more on the
  // communicator.
  virtual void abort() = 0;
};

// Registers `source` with the watchdog (which polls it while a timeout is
// set and several ranks run); dist_unwatch_async removes it, waiting for a
// poll in progress, so the source may be destroyed after it returns.
void dist_watch_async(AsyncCollectives* source);
void dist_unwatch_async(AsyncCollectives* source);

}  // namespace vt
