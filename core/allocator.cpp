#include "core/allocator.h"

#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef VT_CUDA
#include <cuda_runtime.h>
#endif

namespace vt {

void* cpu_alloc(size_t bytes) {
  if (bytes == 0) bytes = 64;
  size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded);
  if (!p) throw std::bad_alloc();
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

struct CudaCache {
  std::mutex mu;
  std::multimap<std::pair<int, size_t>, void*> free_blocks;  // (device, size) -> ptr
  std::map<void*, std::pair<int, size_t>> live;
  size_t in_use = 0, cached = 0;
};

CudaCache& cache() {
  static CudaCache* c = new CudaCache();  // leaked on purpose: outlives static tensors
  return *c;
}

}  // namespace

void* cuda_alloc(size_t bytes, int device) {
  size_t size = round_cuda_size(bytes == 0 ? 1 : bytes);
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.free_blocks.lower_bound({device, size});
  if (it != c.free_blocks.end() && it->first.first == device && it->first.second == size) {
    void* p = it->second;
    c.free_blocks.erase(it);
    c.cached -= size;
    c.live[p] = {device, size};
    c.in_use += size;
    return p;
  }
  int prev = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(device);
  void* p = nullptr;
  cudaError_t err = cudaMalloc(&p, size);
  if (err != cudaSuccess) {
    // Give the cache back and try once more before failing.
    for (auto& kv : c.free_blocks) cudaFree(kv.second);
    c.free_blocks.clear();
    c.cached = 0;
    cudaGetLastError();
    err = cudaMalloc(&p, size);
  }
  cudaSetDevice(prev);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("CUDA out of memory: asked " + std::to_string(size) + " bytes on cuda:" +
                             std::to_string(device) + " with " + std::to_string(c.in_use) +
                             " bytes in use (" + cudaGetErrorString(err) + ")");
  }
  c.live[p] = {device, size};
  c.in_use += size;
  return p;
}

void cuda_free(void* p, int /*device*/) {
  if (!p) return;
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.live.find(p);
  if (it == c.live.end()) return;
  c.free_blocks.insert({it->second, p});
  c.cached += it->second.second;
  c.in_use -= it->second.second;
  c.live.erase(it);
}

void cuda_empty_cache() {
  CudaCache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  for (auto& kv : c.free_blocks) cudaFree(kv.second);
  c.free_blocks.clear();
  c.cached = 0;
}

size_t cuda_bytes_in_use() { return cache().in_use; }
size_t cuda_bytes_cached() { return cache().cached; }

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}
bool cuda_available() { return cuda_device_count() > 0; }

#else

void* cuda_alloc(size_t, int) { throw std::runtime_error("this build has no CUDA support (configure with -DVT_CUDA=ON)"); }
void cuda_free(void*, int) {}
void cuda_empty_cache() {}
size_t cuda_bytes_in_use() { return 0; }
size_t cuda_bytes_cached() { return 0; }
int cuda_device_count() { return 0; }
bool cuda_available() { return false; }

#endif

}  // namespace vt
