#include "core/allocator.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/out_of_memory.h"

#ifdef VT_CUDA
#include <cuda_runtime.h>
#endif

namespace vt {

std::string bytes_text(size_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  std::string out = std::to_string(bytes) + " bytes";
  if (bytes < 1024) return out;
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  char buf[32];
  std::snprintf(buf, sizeof buf, " (%.1f %s)", v, units[u]);
  return out + buf;
}

void* cpu_alloc(size_t bytes) {
  if (bytes == 0) bytes = 64;
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = rounded < bytes ? nullptr : std::aligned_alloc(64, rounded);
  if (!p) throw OutOfMemory("out of host memory: cannot allocate " + bytes_text(bytes));
  return p;
}

void cpu_free(void* p) { std::free(p); }

#ifdef VT_CUDA
namespace {

// The block sizes and pools of PyTorch's CUDACachingAllocator
// (c10/cuda/CUDACachingAllocator.cpp, kMinBlockSize .. kRoundLarge; see
// core/allocator.h for the algorithm).
constexpr size_t kMinBlockSize = 512;        // every block is a multiple of this
constexpr size_t kSmallSize = 1 << 20;       // requests up to this go to the small pool
constexpr size_t kSmallBuffer = 2 << 20;     // the small pool's segments
constexpr size_t kMinLargeAlloc = 10 << 20;  // requests below this get a kLargeBuffer segment
constexpr size_t kLargeBuffer = 20 << 20;
constexpr size_t kRoundLarge = 2 << 20;      // larger requests: a segment of their size rounded to this

size_t round_size(size_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return (bytes + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

// The cudaMalloc size of a new segment for a block of `size` (rounded).
size_t segment_size(size_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return (size + kRoundLarge - 1) / kRoundLarge * kRoundLarge;
}

// A piece of a segment (one cudaMalloc): handed out (allocated), waiting
// for the events of the streams it was used on (pending), or free in its
// pool. prev/next are its neighbours in the segment, by address; every
// block of a segment has the segment's device, stream and pool.
struct Block {
  int device = 0;
  CudaStreamHandle stream = nullptr;  // the allocation stream, or a capture pool's tag
  size_t size = 0;
  char* ptr = nullptr;
  bool small = false;  // in the small pool
  bool allocated = false;
  bool pending = false;
  Block* prev = nullptr;
  Block* next = nullptr;
  std::vector<CudaStreamHandle> stream_uses;  // cuda_record_stream while allocated
  uint64_t freed_at = 0;                      // when it last became free (for the bound: oldest first)
  bool whole_segment() const { return !prev && !next; }
};

// Best fit: the free blocks ordered by (device, stream, size, address), so
// the first at or after (device, stream, size) is the smallest that fits.
struct BlockLess {
  bool operator()(const Block* a, const Block* b) const {
    if (a->device != b->device) return a->device < b->device;
    if (a->stream != b->stream) return std::less<CudaStreamHandle>()(a->stream, b->stream);
    if (a->size != b->size) return a->size < b->size;
    return std::less<char*>()(a->ptr, b->ptr);
  }
};
using Pool = std::set<Block*, BlockLess>;

// A freed block whose other streams may still use it: free once every
// event has completed.
struct PendingBlock {
  Block* block;
  std::vector<cudaEvent_t> events;
};

// The bound on cached bytes from VT_CUDA_MAX_CACHED_BYTES (unset: none).
size_t max_cached_from_env() {
  const char* e = std::getenv("VT_CUDA_MAX_CACHED_BYTES");
  if (!e || !*e) return SIZE_MAX;
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(e, &end, 10);
  if (errno != 0 || *end != '\0' || e[0] == '-')
    throw std::runtime_error(std::string("VT_CUDA_MAX_CACHED_BYTES='") + e +
                             "': expected a byte count (a non-negative integer)");
  return static_cast<size_t>(v);
}

struct CudaCache {
  std::mutex mu;
  Pool small, large;
  std::unordered_map<void*, Block*> live;
  std::vector<PendingBlock> pending;
  size_t in_use = 0, reserved = 0, peak = 0, segments = 0, mallocs = 0, frees = 0;
  size_t max_cached = SIZE_MAX;
  uint64_t tick = 0;
  Pool& pool(const Block* b) { return b->small ? small : large; }
  size_t cached() const { return reserved - in_use; }
};

CudaCache& cache() {
  // Leaked on purpose: outlives static tensors. A bad VT_CUDA_MAX_CACHED_BYTES
  // throws here, at every call until it is fixed.
  static CudaCache* c = [] {
    auto* n = new CudaCache();
    try {
      n->max_cached = max_cached_from_env();
    } catch (...) {
      delete n;
      throw;
    }
    return n;
  }();
  return *c;
}

// Makes b free (c.mu held): merged with its free neighbours (not those
// allocated or pending), then into its pool.
void free_block(CudaCache& c, Block* b) {
  b->allocated = false;
  b->pending = false;
  b->stream_uses.clear();
  Pool& pool = c.pool(b);
  if (Block* p = b->prev; p && !p->allocated && !p->pending) {
    pool.erase(p);
    b->ptr = p->ptr;
    b->size += p->size;
    b->prev = p->prev;
    if (b->prev) b->prev->next = b;
    delete p;
  }
  if (Block* n = b->next; n && !n->allocated && !n->pending) {
    pool.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (b->next) b->next->prev = b;
    delete n;
  }
  b->freed_at = ++c.tick;
  pool.insert(b);
}

// Moves pending blocks whose events have all completed to their pools
// (c.mu held); with `wait`, waits for every event first. cudaEventQuery
// never blocks.
void collect_pending(CudaCache& c, bool wait) {
  for (size_t i = 0; i < c.pending.size();) {
    PendingBlock& pb = c.pending[i];
    bool done = true;
    for (cudaEvent_t e : pb.events) {
      if (wait) {
        cudaEventSynchronize(e);
        continue;
      }
      if (cudaEventQuery(e) == cudaErrorNotReady) {
        cudaGetLastError();
        done = false;
        break;
      }
    }
    if (!done) {
      ++i;
      continue;
    }
    for (cudaEvent_t e : pb.events) cudaEventDestroy(e);
    free_block(c, pb.block);
    c.pending[i] = std::move(c.pending.back());
    c.pending.pop_back();
  }
}

// Gives a whole free segment back to the driver (c.mu held).
void release_segment(CudaCache& c, Block* b) {
  c.pool(b).erase(b);
  int prev = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(b->device);
  cudaFree(b->ptr);
  cudaSetDevice(prev);
  ++c.frees;
  c.reserved -= b->size;
  --c.segments;
  delete b;
}

// The whole free segments, oldest freed first.
std::vector<Block*> free_segments(CudaCache& c) {
  std::vector<Block*> out;
  for (Pool* p : {&c.small, &c.large})
    for (Block* b : *p)
      if (b->whole_segment()) out.push_back(b);
  std::sort(out.begin(), out.end(), [](const Block* a, const Block* b) { return a->freed_at < b->freed_at; });
  return out;
}

// Gives back whole free segments, oldest first, until the cached bytes are
// at most `limit` (c.mu held); returns the bytes given back. Pieces of
// segments still partly in use stay (they cannot be given back alone).
size_t release_down_to(CudaCache& c, size_t limit) {
  size_t released = 0;
  if (c.cached() <= limit) return 0;
  for (Block* b : free_segments(c)) {
    if (c.cached() <= limit) break;
    released += b->size;
    release_segment(c, b);
  }
  return released;
}

void enforce_bound(CudaCache& c) {
  if (c.cached() > c.max_cached) release_down_to(c, c.max_cached);
}

// A new segment for a block of `size` (c.mu held), or null when cudaMalloc
// refuses (*err says why).
Block* new_segment(CudaCache& c, int device, CudaStreamHandle stream, size_t size, cudaError_t* err) {
  const size_t bytes = segment_size(size);
  int prev = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(device);
  void* p = nullptr;
  *err = cudaMalloc(&p, bytes);
  ++c.mallocs;
  cudaSetDevice(prev);
  if (*err != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  ++c.segments;
  c.reserved += bytes;
  Block* b = new Block();
  b->device = device;
  b->stream = stream;
  b->size = bytes;
  b->ptr = static_cast<char*>(p);
  b->small = size <= kSmallSize;
  return b;
}

// The smallest free block of (device, stream, pool) with at least `size`
// bytes, taken out of its pool; or null.
Block* take_best_fit(CudaCache& c, int device, CudaStreamHandle stream, size_t size) {
  Pool& pool = size <= kSmallSize ? c.small : c.large;
  Block key;
  key.device = device;
  key.stream = stream;
  key.size = size;
  auto it = pool.lower_bound(&key);
  if (it == pool.end() || (*it)->device != device || (*it)->stream != stream) return nullptr;
  Block* b = *it;
  pool.erase(it);
  return b;
}

// Whether the rest of b after `size` bytes becomes a free block of its own:
// in the small pool from kMinBlockSize on, in the large pool above
// kSmallSize (a smaller rest stays with the block, as PyTorch's
// should_split, so the large pool holds no pieces small requests would want).
bool should_split(const Block* b, size_t size) {
  const size_t rest = b->size - size;
  return b->small ? rest >= kMinBlockSize : rest > kSmallSize;
}

// The open capture pool of this thread (cuda_capture_pool_begin), or null.
thread_local CudaStreamHandle t_capture_pool = nullptr;

// The cache key of a stream. The default stream (nullptr, and
// cudaStreamPerThread by name) is the per-thread default stream of the
// calling host thread in this build (CMakeLists.txt), so each thread's is a
// stream of its own (CUDA Runtime API, "Per-thread default stream"): a block
// one thread freed with its kernels still queued must not be handed to
// another thread's default stream, which is not ordered after them. Its key
// is the thread's number (unique for the process's life, so a block a
// finished thread left cached is never given to a later thread that might
// reuse its thread-local storage), tagged in the top bit so that it equals
// no real stream handle (keys are only compared, never passed to CUDA).
CudaStreamHandle stream_key(CudaStreamHandle s) {
  if (s != nullptr && s != static_cast<CudaStreamHandle>(cudaStreamPerThread)) return s;
  static std::atomic<uintptr_t> next_thread{1};
  thread_local const uintptr_t thread = next_thread.fetch_add(1);
  return reinterpret_cast<CudaStreamHandle>((uintptr_t(1) << (8 * sizeof(uintptr_t) - 1)) | thread);
}

}  // namespace

void* cuda_alloc(size_t bytes, int device, CudaStreamHandle stream) {
  const size_t size = round_size(bytes);
  const CudaStreamHandle key = t_capture_pool ? t_capture_pool : stream_key(stream);
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.pending.empty()) {
    collect_pending(c, false);
    enforce_bound(c);  // blocks that became free may complete whole free segments
  }
  Block* b = take_best_fit(c, device, key, size);
  if (!b) {
    cudaError_t err = cudaSuccess;
    b = new_segment(c, device, key, size, &err);
    size_t released = 0, released_segments = 0;
    if (!b) {
      // PyTorch's release_cached_blocks: wait for the pending blocks, give
      // every whole free segment back, look again (a pending block may now
      // fit) and try cudaMalloc once more.
      collect_pending(c, true);
      const size_t segments0 = c.segments;
      released = release_down_to(c, 0);
      released_segments = segments0 - c.segments;
      b = take_best_fit(c, device, key, size);
      if (!b) b = new_segment(c, device, key, size, &err);
    }
    if (!b)
      throw OutOfMemory("CUDA out of memory: asked " + std::to_string(bytes) + " bytes on cuda:" +
                        std::to_string(device) + " with " + std::to_string(c.in_use) + " bytes in use and " +
                        std::to_string(c.cached()) + " bytes cached (free pieces of " + std::to_string(c.segments) +
                        " segments in use); cudaMalloc refused a " + std::to_string(segment_size(size)) +
                        "-byte segment, also after the cache gave back " + std::to_string(released) + " bytes (" +
                        std::to_string(released_segments) + " free segments) (" + cudaGetErrorString(err) + ")");
  }
  if (should_split(b, size)) {
    Block* rest = new Block();
    rest->device = b->device;
    rest->stream = b->stream;
    rest->small = b->small;
    rest->ptr = b->ptr + size;
    rest->size = b->size - size;
    rest->prev = b;
    rest->next = b->next;
    if (rest->next) rest->next->prev = rest;
    rest->freed_at = b->freed_at;
    b->next = rest;
    b->size = size;
    c.pool(rest).insert(rest);
  }
  b->allocated = true;
  c.live[b->ptr] = b;
  c.in_use += b->size;
  c.peak = std::max(c.peak, c.in_use);
  return b->ptr;
}

void cuda_record_stream(void* p, CudaStreamHandle stream) {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.live.find(p);
  if (it == c.live.end() || stream_key(stream) == it->second->stream) return;
  auto& uses = it->second->stream_uses;
  if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
}

void cuda_free(void* p, int /*device*/) {
  if (!p) return;
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.live.find(p);
  if (it == c.live.end()) return;
  Block* b = it->second;
  c.live.erase(it);
  c.in_use -= b->size;
  if (b->stream_uses.empty()) {
    free_block(c, b);
  } else {
    PendingBlock pb{b, {}};
    int prev = 0;
    cudaGetDevice(&prev);
    cudaSetDevice(b->device);
    for (CudaStreamHandle s : b->stream_uses) {
      cudaEvent_t e = nullptr;
      if (cudaEventCreateWithFlags(&e, cudaEventDisableTiming) != cudaSuccess ||
          cudaEventRecord(e, static_cast<cudaStream_t>(s)) != cudaSuccess) {
        cudaGetLastError();
        if (e) cudaEventDestroy(e);
        // Without an event the only safe choice is to wait for that stream.
        cudaStreamSynchronize(static_cast<cudaStream_t>(s));
        continue;
      }
      pb.events.push_back(e);
    }
    cudaSetDevice(prev);
    b->allocated = false;
    b->pending = true;
    if (pb.events.empty()) {
      free_block(c, b);
    } else {
      c.pending.push_back(std::move(pb));
    }
  }
  enforce_bound(c);
}

CudaStreamHandle cuda_capture_pool_begin() {
  if (t_capture_pool) throw std::logic_error("cuda_capture_pool_begin: a capture pool is open on this thread");
  t_capture_pool = new char(0);  // a unique tag no stream handle equals
  return t_capture_pool;
}

void cuda_capture_pool_end() { t_capture_pool = nullptr; }

void cuda_capture_pool_release(CudaStreamHandle pool) {
  if (!pool) return;
  CudaCache& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    // Every block of the pool's segments becomes the compute stream's (the
    // default stream of this, the capturing, thread): the free ones leave
    // their pools to be re-keyed (the stream is part of the order), the live
    // and pending ones are re-keyed in place.
    const CudaStreamHandle compute = stream_key(nullptr);
    for (Pool* p : {&c.small, &c.large}) {
      std::vector<Block*> moved;
      for (auto it = p->begin(); it != p->end();) {
        if ((*it)->stream == pool) {
          moved.push_back(*it);
          it = p->erase(it);
        } else {
          ++it;
        }
      }
      for (Block* b : moved) {
        b->stream = compute;
        p->insert(b);
      }
    }
    for (auto& kv : c.live)
      if (kv.second->stream == pool) kv.second->stream = compute;
    for (PendingBlock& pb : c.pending)
      if (pb.block->stream == pool) pb.block->stream = compute;
  }
  delete static_cast<char*>(pool);
}

void cuda_empty_cache() {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  collect_pending(c, true);
  release_down_to(c, 0);
}

void cuda_set_max_cached_bytes(size_t bytes) {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.max_cached = bytes;
  enforce_bound(c);
}

CudaCacheStats cuda_cache_stats() {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  CudaCacheStats s;
  s.malloc_calls = c.mallocs;
  s.free_calls = c.frees;
  s.segments = c.segments;
  s.reserved_bytes = c.reserved;
  s.in_use_bytes = c.in_use;
  s.cached_bytes = c.cached();
  s.peak_in_use_bytes = c.peak;
  s.max_cached_bytes = c.max_cached;
  return s;
}

size_t cuda_bytes_in_use() { return cuda_cache_stats().in_use_bytes; }
size_t cuda_bytes_cached() { return cuda_cache_stats().cached_bytes; }
size_t cuda_peak_bytes_in_use() { return cuda_cache_stats().peak_in_use_bytes; }
void cuda_reset_peak_bytes() {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.peak = c.in_use;
}
size_t cuda_malloc_calls() { return cuda_cache_stats().malloc_calls; }

CudaDeviceInfo cuda_device_info(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cuda:" + std::to_string(device) + ": cannot read the device properties");
  }
  return {prop.name, prop.totalGlobalMem};
}

size_t cuda_free_bytes(int device) {
  int prev = 0;
  cudaGetDevice(&prev);
  size_t free = 0, total = 0;
  cudaError_t err = cudaSetDevice(device);
  if (err == cudaSuccess) err = cudaMemGetInfo(&free, &total);
  cudaSetDevice(prev);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cuda:" + std::to_string(device) + ": cannot read the free memory (" +
                             cudaGetErrorString(err) + ")");
  }
  return free + cuda_bytes_cached();
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}
bool cuda_available() { return cuda_device_count() > 0; }
void cuda_set_device(int device) {
  if (cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cannot make cuda:" + std::to_string(device) + " the current device");
  }
}

#else

void* cuda_alloc(size_t, int, CudaStreamHandle) { throw std::runtime_error("this build has no CUDA support (configure with -DVT_CUDA=ON)"); }
void cuda_free(void*, int) {}
void cuda_record_stream(void*, CudaStreamHandle) {}
void cuda_empty_cache() {}
size_t cuda_bytes_in_use() { return 0; }
size_t cuda_bytes_cached() { return 0; }
size_t cuda_peak_bytes_in_use() { return 0; }
void cuda_reset_peak_bytes() {}
size_t cuda_malloc_calls() { return 0; }
void cuda_set_max_cached_bytes(size_t) {}
CudaCacheStats cuda_cache_stats() { return {}; }
CudaStreamHandle cuda_capture_pool_begin() { throw std::runtime_error("this build has no CUDA support"); }
void cuda_capture_pool_end() {}
void cuda_capture_pool_release(CudaStreamHandle) {}
CudaDeviceInfo cuda_device_info(int) { throw std::runtime_error("this build has no CUDA support"); }
size_t cuda_free_bytes(int) { throw std::runtime_error("this build has no CUDA support"); }
int cuda_device_count() { return 0; }
bool cuda_available() { return false; }
void cuda_set_device(int) { throw std::runtime_error("this build has no CUDA support"); }

#endif

}  // namespace vt
