#include "core/allocator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
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

// Blocks are rounded to 512 bytes (small) or 2 MiB (large) so that repeated
// requests of nearby sizes reuse the same block.
size_t round_cuda_size(size_t bytes) {
  if (bytes < (1u << 20)) return (bytes + 511) / 512 * 512;
  return (bytes + (2u << 20) - 1) / (2u << 20) * (2u << 20);
}

// A block's identity in the cache: its device, the stream it was allocated
// on (it is only ever reused there) and its rounded size.
struct BlockKey {
  int device;
  CudaStreamHandle stream;
  size_t size;
  bool operator<(const BlockKey& o) const {
    if (device != o.device) return device < o.device;
    if (stream != o.stream) return std::less<CudaStreamHandle>()(stream, o.stream);
    return size < o.size;
  }
};

struct LiveBlock {
  BlockKey key;
  std::vector<CudaStreamHandle> other_streams;  // from cuda_record_stream
};

// A freed block whose other streams may still use it: reusable once every
// event has completed.
struct PendingBlock {
  void* ptr;
  BlockKey key;
  std::vector<cudaEvent_t> events;
};

struct CudaCache {
  std::mutex mu;
  std::multimap<BlockKey, void*> free_blocks;
  std::map<void*, LiveBlock> live;
  std::vector<PendingBlock> pending;
  size_t in_use = 0, cached = 0, peak = 0, mallocs = 0;
};

CudaCache& cache() {
  static CudaCache* c = new CudaCache();  // leaked on purpose: outlives static tensors
  return *c;
}

// Moves pending blocks whose events have all completed to the free lists
// (c.mu held). cudaEventQuery never blocks.
void collect_pending(CudaCache& c) {
  for (size_t i = 0; i < c.pending.size();) {
    PendingBlock& b = c.pending[i];
    bool done = true;
    for (cudaEvent_t e : b.events) {
      cudaError_t q = cudaEventQuery(e);
      if (q == cudaErrorNotReady) {
        cudaGetLastError();
        done = false;
        break;
      }
    }
    if (!done) {
      ++i;
      continue;
    }
    for (cudaEvent_t e : b.events) cudaEventDestroy(e);
    c.free_blocks.insert({b.key, b.ptr});
    c.pending[i] = std::move(c.pending.back());
    c.pending.pop_back();
  }
}

// Returns every free block to the driver (c.mu held); with `wait`, pending
// blocks are first waited for.
void release_cached(CudaCache& c, bool wait) {
  if (wait) {
    for (PendingBlock& b : c.pending) {
      for (cudaEvent_t e : b.events) {
        cudaEventSynchronize(e);
        cudaEventDestroy(e);
      }
      c.free_blocks.insert({b.key, b.ptr});
    }
    c.pending.clear();
  }
  for (auto& kv : c.free_blocks) {
    cudaFree(kv.second);
    c.cached -= kv.first.size;
  }
  c.free_blocks.clear();
}

// The open capture pool of this thread (cuda_capture_pool_begin), or null.
thread_local CudaStreamHandle t_capture_pool = nullptr;

}  // namespace

void* cuda_alloc(size_t bytes, int device, CudaStreamHandle stream) {
  size_t size = round_cuda_size(bytes == 0 ? 1 : bytes);
  const BlockKey key{device, t_capture_pool ? t_capture_pool : stream, size};
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (!c.pending.empty()) collect_pending(c);
  auto it = c.free_blocks.find(key);
  if (it != c.free_blocks.end()) {
    void* p = it->second;
    c.free_blocks.erase(it);
    c.cached -= size;
    c.live[p] = {key, {}};
    c.in_use += size;
    c.peak = std::max(c.peak, c.in_use);
    return p;
  }
  int prev = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(device);
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  ++c.mallocs;
  if (err != cudaSuccess) {
    // Give the cache back and try once more before failing.
    cudaGetLastError();
    release_cached(c, true);
    err = cudaMalloc(&p, size);
  }
  cudaSetDevice(prev);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw OutOfMemory("CUDA out of memory: asked " + std::to_string(size) + " bytes on cuda:" + std::to_string(device) +
                      " with " + std::to_string(c.in_use) + " bytes in use (" + cudaGetErrorString(err) + ")");
  }
  c.live[p] = {key, {}};
  c.in_use += size;
  c.peak = std::max(c.peak, c.in_use);
  return p;
}

void cuda_record_stream(void* p, CudaStreamHandle stream) {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.live.find(p);
  if (it == c.live.end() || stream == it->second.key.stream) return;
  auto& others = it->second.other_streams;
  if (std::find(others.begin(), others.end(), stream) == others.end()) others.push_back(stream);
}

void cuda_free(void* p, int /*device*/) {
  if (!p) return;
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.live.find(p);
  if (it == c.live.end()) return;
  const LiveBlock& b = it->second;
  c.cached += b.key.size;
  c.in_use -= b.key.size;
  if (b.other_streams.empty()) {
    c.free_blocks.insert({b.key, p});
  } else {
    PendingBlock pb{p, b.key, {}};
    int prev = 0;
    cudaGetDevice(&prev);
    cudaSetDevice(b.key.device);
    for (CudaStreamHandle s : b.other_streams) {
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
    c.pending.push_back(std::move(pb));
  }
  c.live.erase(it);
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
    std::vector<std::pair<BlockKey, void*>> moved;
    for (auto it = c.free_blocks.begin(); it != c.free_blocks.end();) {
      if (it->first.stream == pool) {
        moved.push_back({{it->first.device, nullptr, it->first.size}, it->second});
        it = c.free_blocks.erase(it);
      } else {
        ++it;
      }
    }
    for (auto& m : moved) c.free_blocks.insert(m);
    for (auto& kv : c.live)
      if (kv.second.key.stream == pool) kv.second.key.stream = nullptr;
    for (PendingBlock& b : c.pending)
      if (b.key.stream == pool) b.key.stream = nullptr;
  }
  delete static_cast<char*>(pool);
}

void cuda_empty_cache() {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  release_cached(c, true);
}

size_t cuda_bytes_in_use() { return cache().in_use; }
size_t cuda_bytes_cached() { return cache().cached; }
size_t cuda_peak_bytes_in_use() { return cache().peak; }
void cuda_reset_peak_bytes() {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.peak = c.in_use;
}
size_t cuda_malloc_calls() { return cache().mallocs; }

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
