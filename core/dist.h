// Data-parallel processes: rank, world size and local rank, and the few
// collectives training needs (MPI on CPUs, in the shape of
// torch.distributed's all_reduce / broadcast / barrier).
//
// dist() is one process-wide object. DistSession (one in each program's
// main) starts it: under an MPI launcher (mpirun, srun: OMPI_COMM_WORLD_SIZE,
// PMI_SIZE, PMIX_RANK or SLURM_NTASKS set) and in a build with MPI
// (CMake option VT_MPI) it calls MPI_Init_thread(MPI_THREAD_FUNNELED): the
// data loader has threads, only the main thread calls MPI. Otherwise, and
// before any DistSession, it is the single process: rank 0, world 1, every
// collective a no-op.
//
// local_rank (which GPU this process drives) comes from
// OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID or SLURM_LOCALID, else
// MPI_Comm_split_type(MPI_COMM_TYPE_SHARED); 0 in a single process.
//
// Timeout (dist.timeout_s, core/dist_watchdog.h): with several ranks, a
// collective that has not completed within the timeout ends the whole job
// with exit status kExitDistTimeout (core/exit_status.h) and a message naming
// the rank, the step and the operation.
//
// Errors: a failed MPI call aborts the job (MPI_ERRORS_ARE_FATAL);
// DistSession throws std::runtime_error when the build has no MPI but the
// launcher started several processes (they would all train alone).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vt {

class Dist {
 public:
  int rank() const { return rank_; }
  int world() const { return world_; }
  int local_rank() const { return local_rank_; }
  bool is_root() const { return rank_ == 0; }
  bool active() const { return mpi_; }  // MPI initialised (even with world 1)
  const std::string& host() const { return host_; }

  // In-place element-wise sum over all ranks of n values (MPI_Allreduce).
  void allreduce_sum(float* data, size_t n) const;
  void allreduce_sum(double* data, size_t n) const;
  void allreduce_sum(int64_t* data, size_t n) const;
  // Every rank's `bytes` bytes (the count may differ between ranks),
  // concatenated in rank order on every rank (MPI_Allgather of the counts,
  // then MPI_Allgatherv); `sizes`, when given, receives each rank's count.
  // Throws std::invalid_argument when a count or the total exceeds INT_MAX
  // bytes (MPI's int counts). One process: a copy of its own bytes.
  std::vector<unsigned char> allgather_bytes(const void* data, size_t bytes,
                                             std::vector<size_t>* sizes = nullptr) const;
  // The same concatenation on rank `root` only (MPI_Gatherv); the other
  // ranks get an empty vector. Same errors as allgather_bytes.
  std::vector<unsigned char> gather_bytes(const void* data, size_t bytes, int root = 0) const;
  // Copies `bytes` bytes of rank `root`'s buffer into every rank's (MPI_Bcast).
  void broadcast(void* data, size_t bytes, int root = 0) const;
  // `what` names the wait in a timeout message; timed false: no
  // dist.timeout_s (a wait for work of unknown length on another rank).
  void barrier(const char* what = nullptr, bool timed = true) const;
  // Ends every rank of the job with exit status `code` (MPI_Abort; exit()
  // in a single process). For a failure on one rank: the others may be
  // waiting in a collective and would otherwise hang.
  [[noreturn]] void abort(int code) const;

 private:
  friend class DistSession;
  int rank_ = 0, world_ = 1, local_rank_ = 0;
  bool mpi_ = false;
  std::string host_;
};

// The process's Dist (single process until a DistSession starts MPI).
const Dist& dist();

// Whether this build can run several processes (VT_MPI).
bool dist_built_with_mpi();

// Starts MPI when launched under a launcher (see above), finalises it on
// destruction. One per process, in main, before anything else.
class DistSession {
 public:
  DistSession(int* argc, char*** argv);
  ~DistSession();
  DistSession(const DistSession&) = delete;
  DistSession& operator=(const DistSession&) = delete;
};

// Ends a program after an error: with several ranks, prints nothing more and
// aborts the whole job with `code` (the caller has printed its message);
// otherwise returns `code` for main to return.
int dist_fail(int code);

// " (rank R of W)" with several ranks, "" otherwise: for error messages.
std::string dist_rank_tag();

}  // namespace vt
