// Exit statuses of the training programs (vtrain, dittrain), one list for
// both, for job scripts that decide whether to requeue a run
// (docs/cluster.md):
//
//   0  kExitOk               the run finished (or had nothing left to do)
//   1  kExitError            a runtime error: data, checkpoint read,
//                            non-finite loss, out of memory, ...
//   2  kExitUsage            bad command line or configuration; nothing ran
//   3  kExitStopped          stopped by request (a stop signal, run.stop_signals):
//                            the step in flight finished, a checkpoint of it was
//                            written; `resume: auto` continues bit for bit.
//                            Requeue the job.
//   4  kExitDistTimeout      a collective did not complete within
//                            dist.timeout_s (a dead or stuck rank); the job
//                            was aborted. The newest checkpoint is complete;
//                            requeue once the node is healthy.
//   5  kExitCheckpointWrite  a checkpoint could not be written (disk full,
//                            quota, I/O error, file-size limit); the previous
//                            checkpoint is intact and the partial one removed.
//                            Free space, then resume.
//
// Under mpirun, the job's status is that of the rank that ended it
// (MPI_Abort's code), or, when every rank stops by request, kExitStopped.
// A process killed by a signal it does not handle (SIGKILL) has no status of
// its own: shells report 128 + the signal number (137 for SIGKILL).
#pragma once

namespace vt {

inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitStopped = 3;
inline constexpr int kExitDistTimeout = 4;
inline constexpr int kExitCheckpointWrite = 5;

}  // namespace vt
