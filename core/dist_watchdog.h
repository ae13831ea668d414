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
// core/dist.cpp and the training loop (which names the step).
#pragma once
#include <cstddef>
#include <cstdint>

namespace vt {

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

}  // namespace vt
