#include "core/dist.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "core/dist_watchdog.h"
#include "core/log.h"

#ifdef VT_MPI
#include <mpi.h>
#endif

namespace vt {

namespace {

Dist g_dist;

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// Launched by mpirun/srun (several processes or one)?
bool under_launcher() {
  return env("OMPI_COMM_WORLD_SIZE") || env("PMI_SIZE") || env("PMIX_RANK") || env("SLURM_NTASKS") ||
         env("MPI_LOCALNRANKS");
}

[[maybe_unused]] int launcher_world() {
  for (const char* k : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"})
    if (const char* v = env(k)) return std::atoi(v);
  return 1;
}

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

}  // namespace

const Dist& dist() { return g_dist; }

bool dist_built_with_mpi() {
#ifdef VT_MPI
  return true;
#else
  return false;
#endif
}

#ifdef VT_MPI
void Dist::allreduce_sum(float* data, size_t n) const {
  CollectiveWatch w("MPI_Allreduce", n, "floats");
  if (mpi_ && world_ > 1) MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}
void Dist::allreduce_sum(double* data, size_t n) const {
  CollectiveWatch w("MPI_Allreduce", n, "doubles");
  if (mpi_ && world_ > 1) MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
}
void Dist::allreduce_sum(int64_t* data, size_t n) const {
  CollectiveWatch w("MPI_Allreduce", n, "int64s");
  if (mpi_ && world_ > 1)
    MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}
std::vector<unsigned char> Dist::gather_bytes(const void* data, size_t bytes, int root) const {
  const auto* p = static_cast<const unsigned char*>(data);
  if (!(mpi_ && world_ > 1)) return std::vector<unsigned char>(p, p + bytes);
  constexpr size_t kMax = static_cast<size_t>(std::numeric_limits<int>::max());
  if (bytes > kMax)
    throw std::invalid_argument("Dist::gather_bytes: " + std::to_string(bytes) + " bytes exceed MPI's int count");
  CollectiveWatch w("MPI_Gatherv", bytes, "bytes");
  int mine = static_cast<int>(bytes);
  std::vector<int> counts(static_cast<size_t>(world_)), displs(static_cast<size_t>(world_));
  // Every rank learns the counts, so all take the same decision on the total.
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  size_t total = 0;
  for (int r = 0; r < world_; ++r) {
    if (total > kMax) throw std::invalid_argument("Dist::gather_bytes: the gathered total exceeds MPI's int count");
    displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += static_cast<size_t>(counts[static_cast<size_t>(r)]);
  }
  if (total > kMax) throw std::invalid_argument("Dist::gather_bytes: the gathered total exceeds MPI's int count");
  std::vector<unsigned char> out(rank_ == root ? total : 0);
  MPI_Gatherv(p, mine, MPI_BYTE, out.data(), counts.data(), displs.data(), MPI_BYTE, root, MPI_COMM_WORLD);
  return out;
}
std::vector<unsigned char> Dist::allgather_bytes(const void* data, size_t bytes, std::vector<size_t>* sizes) const {
  const auto* p = static_cast<const unsigned char*>(data);
  if (!(mpi_ && world_ > 1)) {
    if (sizes) *sizes = {bytes};
    return std::vector<unsigned char>(p, p + bytes);
  }
  constexpr size_t kMax = static_cast<size_t>(std::numeric_limits<int>::max());
  if (bytes > kMax)
    throw std::invalid_argument("Dist::allgather_bytes: " + std::to_string(bytes) + " bytes exceed MPI's int count");
  CollectiveWatch w("MPI_Allgatherv", bytes, "bytes");
  int mine = static_cast<int>(bytes);
  std::vector<int> counts(static_cast<size_t>(world_)), displs(static_cast<size_t>(world_));
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  size_t total = 0;
  for (int r = 0; r < world_; ++r) {
    if (total > kMax) throw std::invalid_argument("Dist::allgather_bytes: the gathered total exceeds MPI's int count");
    displs[static_cast<size_t>(r)] = static_cast<int>(total);
    total += static_cast<size_t>(counts[static_cast<size_t>(r)]);
  }
  if (total > kMax) throw std::invalid_argument("Dist::allgather_bytes: the gathered total exceeds MPI's int count");
  std::vector<unsigned char> out(total);
  MPI_Allgatherv(p, mine, MPI_BYTE, out.data(), counts.data(), displs.data(), MPI_BYTE, MPI_COMM_WORLD);
  if (sizes) sizes->assign(counts.begin(), counts.end());
  return out;
}
void Dist::broadcast(void* data, size_t bytes, int root) const {
  CollectiveWatch w("MPI_Bcast", bytes, "bytes");
  if (mpi_ && world_ > 1) MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD);
}
void Dist::barrier(const char* what, bool timed) const {
  CollectiveWatch w(what ? what : "MPI_Barrier", 0, "values", timed);
  if (mpi_ && world_ > 1) MPI_Barrier(MPI_COMM_WORLD);
}
void Dist::abort(int code) const {
  std::fflush(stdout);
  std::fflush(stderr);
  if (mpi_) MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}
#else
void Dist::allreduce_sum(float*, size_t) const {}
void Dist::allreduce_sum(double*, size_t) const {}
void Dist::allreduce_sum(int64_t*, size_t) const {}
std::vector<unsigned char> Dist::allgather_bytes(const void* data, size_t bytes, std::vector<size_t>* sizes) const {
  const auto* p = static_cast<const unsigned char*>(data);
  if (sizes) *sizes = {bytes};
  return std::vector<unsigned char>(p, p + bytes);
}
std::vector<unsigned char> Dist::gather_bytes(const void* data, size_t bytes, int) const {
  const auto* p = static_cast<const unsigned char*>(data);
  return std::vector<unsigned char>(p, p + bytes);
}
void Dist::broadcast(void*, size_t, int) const {}
void Dist::barrier(const char*, bool) const {}
void Dist::abort(int code) const {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(code);
}
#endif

DistSession::DistSession(int* argc, char*** argv) {
  g_dist.host_ = hostname();
  if (!under_launcher()) return;
#ifdef VT_MPI
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  g_dist.mpi_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_dist.rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &g_dist.world_);
  // Rank 0 speaks for the job; the others only warn (and report errors).
  if (g_dist.rank_ != 0) log().set_level(spdlog::level::warn);
  if (provided < MPI_THREAD_FUNNELED) {
    std::fprintf(stderr, "rank %d: MPI provides thread level %d < MPI_THREAD_FUNNELED\n", g_dist.rank_, provided);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  const char* lr = env("OMPI_COMM_WORLD_LOCAL_RANK");
  if (!lr) lr = env("MPI_LOCALRANKID");
  if (!lr) lr = env("SLURM_LOCALID");
  if (lr) {
    g_dist.local_rank_ = std::atoi(lr);
  } else {
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, g_dist.rank_, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &g_dist.local_rank_);
    MPI_Comm_free(&node);
  }
  // One line per rank: where each process runs (multi-node launches).
  if (g_dist.world_ > 1)
    std::fprintf(stderr, "rank %d of %d: host %s, local rank %d, pid %d\n", g_dist.rank_, g_dist.world_,
                 g_dist.host_.c_str(), g_dist.local_rank_, static_cast<int>(getpid()));
#else
  (void)argc, (void)argv;
  if (launcher_world() > 1)
    throw std::runtime_error("launched as " + std::to_string(launcher_world()) +
                             " processes but this build has no MPI (configure with VT_MPI=ON and OpenMPI installed)");
#endif
}

DistSession::~DistSession() {
#ifdef VT_MPI
  if (g_dist.mpi_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
    g_dist.mpi_ = false;
  }
#endif
}

std::string dist_rank_tag() {
  if (g_dist.world() == 1) return "";
  return " (rank " + std::to_string(g_dist.rank()) + " of " + std::to_string(g_dist.world()) + ")";
}

int dist_fail(int code) {
  if (g_dist.world() > 1) g_dist.abort(code);
  return code;
}

}  // namespace vt
