// Memory for tensor storage.
//  - CPU: 64-byte aligned (one cache line, AVX-512 width), never zero-filled
//    unless asked.
//  - CUDA (VT_CUDA builds): a caching allocator (below) that keeps freed
//    device memory for reuse, so a training step that allocates the same
//    shapes every iteration, and a GPU input pipeline whose sizes vary from
//    image to image (data_pipeline/device), call cudaMalloc only while
//    warming up.
//
// The CUDA caching allocator follows PyTorch's CUDACachingAllocator
// (c10/cuda/CUDACachingAllocator.cpp, the native allocator):
//  - Requests are rounded up to a multiple of 512 bytes (kMinBlockSize; 0
//    bytes get 512). Those of at most 1 MiB are served from the small pool,
//    the others from the large pool; the pools never lend to each other.
//  - cudaMalloc is called for whole segments: 2 MiB for a small request,
//    20 MiB for a request under 10 MiB, else the request rounded up to
//    2 MiB. A segment is cut into blocks, neighbours by address.
//  - A request takes the best fit: the smallest free block of its pool on
//    its (device, stream) with at least the rounded size (ties: the lowest
//    address). When the rest would be at least 512 bytes (small pool) or
//    more than 1 MiB (large pool) the block is split and the rest is a free
//    block of its own; else the whole block is handed out (and counted in
//    use).
//  - A freed block is merged with its free neighbours (not those handed out
//    or waiting for events) into one free block.
//  - When cudaMalloc refuses a segment, the cache waits for the events of
//    its pending blocks, gives every whole free segment (one free block
//    spanning its segment) back with cudaFree, looks again for a fitting
//    block and calls cudaMalloc once more; when that fails too, cuda_alloc
//    throws vt::OutOfMemory (below).
//  - Unlike PyTorch's, the cache has an optional bound on its cached bytes
//    (segments' bytes not handed out): VT_CUDA_MAX_CACHED_BYTES (a byte
//    count, read at the first use; another value throws std::runtime_error
//    naming it) or cuda_set_max_cached_bytes. Whenever a block is freed (or
//    the bound set) and the cached bytes exceed it, whole free segments are
//    given back, the least recently freed first, until they do not or none
//    is left (pieces of segments partly in use stay). Unset, the cache
//    keeps everything (PyTorch's default). A bound below a workload's
//    working set makes it call cudaMalloc again in its steady state.
#pragma once
#include <cstddef>
#include <string>

#include "core/dtype.h"

namespace vt {

void* cpu_alloc(size_t bytes);  // throws std::bad_alloc
void cpu_free(void* p);

// A cudaStream_t passed as an opaque handle (so this header needs no CUDA
// headers); nullptr is the default stream (the per-thread one in this
// build, CMakeLists.txt: the compute stream).
using CudaStreamHandle = void*;

// cuda_alloc throws std::runtime_error in builds without VT_CUDA.
//
// Streams (the same contract as PyTorch's CUDACachingAllocator): a block
// belongs to the stream it was allocated on. cuda_free returns it to that
// stream's cache at once, without synchronising: kernels queued on the same
// stream before the free still run before any later user of the block, so
// the block is handed out again only to allocations on that same stream.
// The default stream (nullptr) is the calling host thread's per-thread
// default stream, one per thread: a block allocated on it goes back, from
// whichever thread frees it, to that thread's cache only, never to another
// thread's default stream.
// A block that was also used on other streams must be declared with
// cuda_record_stream before it is freed; its free then records an event on
// each of those streams, and the block becomes reusable (on its own stream)
// only once all those events have completed (polled, never waited for, by
// later cuda_alloc calls). The cache is shared by all host threads (a mutex).
// Throws vt::OutOfMemory (a std::bad_alloc: "CUDA out of memory: asked N
// bytes on cuda:D with M bytes in use and C bytes cached in K segments ...",
// then the segment size cudaMalloc refused and what the cache gave back)
// when the device has no room even after the cache was given back;
// Tensor::empty adds the tensor's shape and dtype. Blocks are found per
// (device, stream), so a block is only ever cut from, and merged with,
// memory of its own stream: splitting keeps the stream contract.
void* cuda_alloc(size_t bytes, int device, CudaStreamHandle stream = nullptr);
void cuda_free(void* p, int device);
// A block of `bytes` (none for 0) from cuda_alloc for one scope, e.g. a
// library call's workspace, freed at scope exit while work queued on
// `stream` may still use it: safe because a block is handed out again only
// to later work on that same stream (see above).
class CudaScratch {
 public:
  CudaScratch(size_t bytes, int device, CudaStreamHandle stream)
      : device_(device), ptr_(bytes ? cuda_alloc(bytes, device, stream) : nullptr) {}
  ~CudaScratch() {
    if (ptr_) cuda_free(ptr_, device_);
  }
  CudaScratch(const CudaScratch&) = delete;
  CudaScratch& operator=(const CudaScratch&) = delete;
  void* get() const { return ptr_; }

 private:
  int device_;
  void* ptr_;
};

// Declares that the live block p is used by work queued on `stream` (other
// than its allocation stream); no-op for the allocation stream itself and
// for pointers this allocator did not hand out.
void cuda_record_stream(void* p, CudaStreamHandle stream);
// The private memory pool of a CUDA Graph capture (core/cuda_graph.h; as
// PyTorch's graph pools): between cuda_capture_pool_begin and _end, every
// cuda_alloc of the calling thread is served from and returned to a pool of
// its own (keyed by the returned tag in place of the stream), so a block a
// captured kernel reads or writes is never handed to other work while the
// graph may be replayed, whoever frees it and when; blocks freed during the
// capture are reused within it (replay keeps the captured order). The pool
// goes back to the compute stream's cache at cuda_capture_pool_release
// (when the graph is destroyed). One capture per thread at a time.
CudaStreamHandle cuda_capture_pool_begin();
void cuda_capture_pool_end();
void cuda_capture_pool_release(CudaStreamHandle pool);
// Releases every whole free segment back to the driver (after waiting for
// the events of blocks freed across streams); pieces of segments still
// partly in use stay cached.
void cuda_empty_cache();
// Bytes currently handed out (blocks' rounded sizes) / cached (the
// segments' bytes not handed out), over all devices.
size_t cuda_bytes_in_use();
size_t cuda_bytes_cached();  // includes blocks waiting for their events
// Highest cuda_bytes_in_use() since the start or the last reset (the
// trainers' "peak GPU memory"); cudaMalloc calls made by the cache so far
// (a steady-state training step makes none: workspaces are planned once).
size_t cuda_peak_bytes_in_use();
void cuda_reset_peak_bytes();
size_t cuda_malloc_calls();
// The bound on cached bytes (see the top of this file); SIZE_MAX: none.
// Setting it gives back whole free segments at once as needed.
void cuda_set_max_cached_bytes(size_t bytes);
// The cache's state, over all devices: cudaMalloc calls made (failed ones
// included) and cudaFree calls (segments given back), the segments held and
// their bytes (reserved = in use + cached), the bytes in use, cached and
// their peak (as the functions above), and the bound.
struct CudaCacheStats {
  size_t malloc_calls = 0, free_calls = 0, segments = 0, reserved_bytes = 0;
  size_t in_use_bytes = 0, cached_bytes = 0, peak_in_use_bytes = 0, max_cached_bytes = 0;
};
CudaCacheStats cuda_cache_stats();

// Name and total memory of a CUDA device (throws std::runtime_error without
// one).
struct CudaDeviceInfo {
  std::string name;
  size_t total_bytes = 0;
};
CudaDeviceInfo cuda_device_info(int device);
// Bytes a new allocation on `device` can still get: the runtime's free
// memory (cudaMemGetInfo) plus what this process's cache holds unused
// (cuda_bytes_cached: whole free segments it would give back, and free
// pieces of segments in use, which serve later requests). Throws
// std::runtime_error when the runtime cannot say, or without VT_CUDA.
size_t cuda_free_bytes(int device);

// Whether a CUDA device is visible (false in builds without VT_CUDA).
bool cuda_available();
int cuda_device_count();
// Makes `device` current for this host thread (kernels launch there);
// throws std::runtime_error when that fails or without VT_CUDA.
void cuda_set_device(int device);

}  // namespace vt
