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
#include <mpi.h>
#include <nccl.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

struct ncclComm {
  MPI_Comm comm;
  int rank, nranks;
};

namespace {

bool mpi_type(ncclDataType_t t, MPI_Datatype* m, size_t* size) {
  switch (t) {
    case ncclFloat32: *m = MPI_FLOAT, *size = 4; return true;
    case ncclFloat64: *m = MPI_DOUBLE, *size = 8; return true;
    case ncclInt32: *m = MPI_INT32_T, *size = 4; return true;
    case ncclInt64: *m = MPI_INT64_T, *size = 8; return true;
    default: return false;
  }
}

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

}  // namespace

extern "C" {

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclInvalidArgument: return "invalid argument (NCCL emulator: unsupported type or op, or bad rank)";
    case ncclInvalidUsage: return "invalid usage (NCCL emulator: MPI not initialised)";
    default: return "NCCL emulator error";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id, 0, sizeof *id);
  std::strcpy(id->internal, "vt-nccl-emu");
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  int init = 0, size = 0, me = 0;
  MPI_Initialized(&init);
  if (!init) return ncclInvalidUsage;
  if (std::strcmp(id.internal, "vt-nccl-emu") != 0) return ncclInvalidArgument;  // not broadcast from rank 0
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (nranks != size || rank != me) return ncclInvalidArgument;
  auto* c = new ncclComm{MPI_COMM_NULL, rank, nranks};
  MPI_Comm_dup(MPI_COMM_WORLD, &c->comm);
  *comm = c;
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm) {
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin) MPI_Comm_free(&comm->comm);
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
                           ncclComm_t comm, cudaStream_t) {
  MPI_Datatype mt;
  size_t size = 0;
  if (!comm || !mpi_type(type, &mt, &size)) return ncclInvalidArgument;
  MPI_Op mop;
  switch (op) {
    case ncclSum: case ncclAvg: mop = MPI_SUM; break;
    case ncclProd: mop = MPI_PROD; break;
    case ncclMax: mop = MPI_MAX; break;
    case ncclMin: mop = MPI_MIN; break;
    default: return ncclInvalidArgument;
  }
  // MPI counts are int: reduce in chunks.
  const size_t chunk = size_t(1) << 30;
  for (size_t off = 0; off < count; off += chunk) {
    const int n = static_cast<int>(count - off < chunk ? count - off : chunk);
    char* r = static_cast<char*>(recv) + off * size;
    const char* s = static_cast<const char*>(send) + off * size;
    MPI_Allreduce(s == r ? MPI_IN_PLACE : s, r, n, mt, mop, comm->comm);
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

ncclResult_t ncclGroupStart() { return ncclSuccess; }
ncclResult_t ncclGroupEnd() { return ncclSuccess; }

}  // extern "C"
