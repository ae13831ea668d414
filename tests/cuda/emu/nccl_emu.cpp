// The NCCL calls of train/grad_allreduce_nccl.cpp served by MPI, for the
// CUDA emulator only: "device" buffers are host memory there (runtime.cpp),
// so the collective is MPI_Allreduce over the communicator's ranks, which
// mpirun starts as for a real multi-GPU run. This lets `mpirun -np 2` of
// emulated-GPU code check the NCCL path's plumbing (unique id broadcast,
// communicator ranks, in-place reduce, the average) without a GPU.
//
// ncclAvg is the sum followed by a multiplication with 1/nranks in the
// buffer's type, exactly what MpiGradientAllReduce does on the CPU, so an
// emulated run averages bitwise as the CPU path does. Real NCCL computes
// the float average as a sum of inputs premultiplied by 1/nranks, in its
// own ring/tree order: on a GPU the results agree to rounding only.
// Supported: ncclFloat, ncclDouble, ncclInt32, ncclInt64; ncclSum, ncclProd,
// ncclMax, ncclMin, ncclAvg; anything else returns ncclInvalidArgument.
// Built without MPI (VT_MPI unset) it serves a world of 1 only, so any
// emulator binary that links vt_train (whose all-reduce factory references
// NCCL) can include it. Every ncclAllReduce is logged (nccl_emu.h).
//
// Work runs at launch, after the stream's queued work (emu_streams.h's
// drain): ncclAllReduce returns once MPI_Allreduce has, so the
// all-reduce of a rank whose peer sleeps is "not complete" for as long as
// its launch blocks (the caller's watchdog thread sees it running), and the
// stream is idle again once it returns.
// ncclCommGetAsyncError and ncclCommAbort follow nccl.h ("Checks whether the
// comm has encountered any asynchronous errors"; "Frees resources associated
// with communicator object and aborts any operations that might still be
// running on the device"): an MPI failure ends the job (MPI's default error
// handler), so no asynchronous error arises by itself and the call reports
// ncclSuccess, unless a test asks for one: VT_EMU_NCCL_ASYNC_ERROR=RANK:N
// makes rank RANK's communicators report ncclRemoteError (a peer that
// died) once its N-th ncclAllReduce (from 1) has begun. The abort marks the
// communicator aborted and writes "NCCL emulator: ncclCommAbort on rank R"
// to stderr, for tests. An MPI_Allreduce in progress on another thread
// cannot be interrupted: it stays blocked until the caller ends the job (as
// train/grad_allreduce_nccl.cpp does right after), or completes when the
// peer joins it late; one that returns after the abort began writes "NCCL
// emulator: an ncclAllReduce on rank R returned after ncclCommAbort", so a
// test can tell that its caller went on past the abort. The communicator's
// memory is left to the process's end, since that thread still uses it.
//
// Use after the abort: on a GPU the communicator is freed ("Frees resources
// associated with communicator object", nccl.h), so any later call on it
// (ncclAllReduce, ncclCommGetAsyncError, ncclCommDestroy, a second
// ncclCommAbort) is a use after free with undefined behaviour. The emulator
// makes it loud instead: it writes "NCCL emulator: <call> on rank R after
// ncclCommAbort: the communicator is freed (use after free on a GPU)" to
// stderr and calls abort(), so the test fails with SIGABRT.
//
// VT_EMU_NCCL_ABORT_HANG=1: ncclCommAbort marks the communicator aborted,
// writes its line, then never returns, as reported on GPUs: ncclCommAbort
// stuck in commReclaim/commFree joining NCCL's proxy threads
// (NVIDIA/nccl#863, #992, #1777), or waiting for the other ranks to abort
// (pytorch/pytorch#119215); PyTorch waits for its abort with a timeout for
// that reason (ProcessGroupNCCL::abort, waitForFutureOrTimeout:
// pytorch/pytorch#149153). Any other value but 0 or unset is refused with
// a message naming the variable.
#ifdef VT_MPI
#include <mpi.h>
#endif
#include <nccl.h>

#include "nccl_emu.h"
#include "emu_streams.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <type_traits>
#include <utility>

#ifndef VT_MPI
using MPI_Comm = int;
#endif

struct ncclComm {
  MPI_Comm comm;
  int rank, nranks;
  std::atomic<bool> aborted{false};
  std::atomic<size_t> calls{0};  // ncclAllReduce calls begun
};

namespace {

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclFloat32: case ncclInt32: return 4;
    case ncclFloat64: case ncclInt64: return 8;
    default: return 0;
  }
}

#ifdef VT_MPI
MPI_Datatype mpi_type(ncclDataType_t t) {
  switch (t) {
    case ncclFloat32: return MPI_FLOAT;
    case ncclFloat64: return MPI_DOUBLE;
    case ncclInt32: return MPI_INT32_T;
    default: return MPI_INT64_T;
  }
}
#endif

template <class T>
void scale(void* p, size_t n, int nranks) {
  T* v = static_cast<T*>(p);
  if constexpr (std::is_floating_point_v<T>) {
    const T inv = T(1) / static_cast<T>(nranks);
    for (size_t i = 0; i < n; ++i) v[i] *= inv;
  } else {
    for (size_t i = 0; i < n; ++i) v[i] /= nranks;
  }
}

// A call on a communicator ncclCommAbort has freed (above): fails loudly.
void check_not_aborted(const ncclComm* comm, const char* call) {
  if (!comm->aborted.load()) return;
  std::fprintf(stderr,
               "NCCL emulator: %s on rank %d after ncclCommAbort: the communicator is freed (use after free on a "
               "GPU)\n",
               call, comm->rank);
  std::abort();
}

// VT_EMU_NCCL_ABORT_HANG (above): true when ncclCommAbort must never return.
bool abort_hangs() {
  static const bool hang = [] {
    const char* v = std::getenv("VT_EMU_NCCL_ABORT_HANG");
    if (!v || !*v || std::strcmp(v, "0") == 0) return false;
    if (std::strcmp(v, "1") == 0) return true;
    std::fprintf(stderr, "NCCL emulator: VT_EMU_NCCL_ABORT_HANG='%s': expected 0 or 1\n", v);
    std::exit(2);
  }();
  return hang;
}

}  // namespace

std::vector<vt_emu::NcclCall>& vt_emu::nccl_calls() {
  static std::vector<NcclCall> calls;
  return calls;
}

extern "C" {

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (NCCL emulator: unsupported type or op, or bad rank)";
    case ncclRemoteError: return "remote process exited or there was a network error (NCCL emulator: VT_EMU_NCCL_ASYNC_ERROR)";
    case ncclInvalidUsage: return "invalid usage (NCCL emulator)";
    default: return "NCCL emulator error";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof *id);
  std::strcpy(id->internal, "vt-nccl-emu");
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (std::strcmp(id.internal, "vt-nccl-emu") != 0) return ncclInvalidArgument;  // not broadcast from rank 0
#ifdef VT_MPI
  int init = 0, size = 1, me = 0;
  MPI_Initialized(&init);
  if (init) {
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
  }
  if (nranks != size || rank != me) return ncclInvalidArgument;
  auto* c = new ncclComm{MPI_COMM_NULL, rank, nranks, {}, {}};
  if (init) MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
#else
  if (nranks != 1 || rank != 0) return ncclInvalidArgument;
  auto* c = new ncclComm{0, 0, 1, {}, {}};
#endif
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm) {
    check_not_aborted(comm, "ncclCommDestroy");
#ifdef VT_MPI
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin && comm->comm != MPI_COMM_NULL) MPI_Comm_free(&comm->comm);
#endif
    delete comm;
  }
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  const size_t size = type_size(type);
  // The reduction reads what the stream's earlier work wrote: wait for it,
  // then reduce on this thread (below).
  vt_emu::drain(stream);
  if (!comm || size == 0) return ncclInvalidArgument;
  check_not_aborted(comm, "ncclAllReduce");
  if (op != ncclSum && op != ncclAvg && op != ncclProd && op != ncclMax && op != ncclMin) return ncclInvalidArgument;
  ++comm->calls;
  vt_emu::nccl_calls().push_back({recv, count});
  if (comm->nranks == 1) {
    if (send != recv) std::memmove(recv, send, count * size);
  } else {
#ifdef VT_MPI
    const MPI_Op mop = op == ncclProd ? MPI_PROD : op == ncclMax ? MPI_MAX : op == ncclMin ? MPI_MIN : MPI_SUM;
    // MPI counts are int: reduce in chunks.
    const size_t chunk = size_t(1) << 30;
    for (size_t off = 0; off < count; off += chunk) {
      const int n = static_cast<int>(count - off < chunk ? count - off : chunk);
      char* r = static_cast<char*>(recv) + off * size;
      const char* s = static_cast<const char*>(send) + off * size;
      MPI_Allreduce(s == r ? MPI_IN_PLACE : s, r, n, mpi_type(type), mop, comm->comm);
    }
#endif
  }
  if (comm->aborted.load()) {
    // The abort began while this call was blocked (a late peer): on a GPU
    // the kernel was killed and the buffer holds no defined result.
    std::fprintf(stderr, "NCCL emulator: an ncclAllReduce on rank %d returned after ncclCommAbort\n", comm->rank);
    return ncclSuccess;
  }
  if (op == ncclAvg) {
    switch (type) {
      case ncclFloat32: scale<float>(recv, count, comm->nranks); break;
      case ncclFloat64: scale<double>(recv, count, comm->nranks); break;
      case ncclInt32: scale<int32_t>(recv, count, comm->nranks); break;
      default: scale<int64_t>(recv, count, comm->nranks); break;
    }
  }
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* asyncError) {
  if (!comm || !asyncError) return ncclInvalidArgument;
  check_not_aborted(comm, "ncclCommGetAsyncError");
  static const auto injected = [] {  // {rank, call}: VT_EMU_NCCL_ASYNC_ERROR (above); {-1, 0}: none
    int rank = -1;
    size_t call = 0;
    const char* v = std::getenv("VT_EMU_NCCL_ASYNC_ERROR");
    if (v && std::sscanf(v, "%d:%zu", &rank, &call) != 2) rank = -1;
    return std::pair<int, size_t>(rank, call);
  }();
  const bool failed = comm->rank == injected.first && comm->calls.load() >= injected.second;
  *asyncError = failed ? ncclRemoteError : ncclSuccess;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm) return ncclSuccess;
  check_not_aborted(comm, "ncclCommAbort");
  comm->aborted.store(true);
  std::fprintf(stderr, "NCCL emulator: ncclCommAbort on rank %d\n", comm->rank);
  if (abort_hangs()) {
    std::fprintf(stderr, "NCCL emulator: ncclCommAbort on rank %d hangs (VT_EMU_NCCL_ABORT_HANG=1)\n", comm->rank);
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

}  // extern "C"
