// Memory for tensor storage.
//  - CPU: 64-byte aligned (one cache line, AVX-512 width), never zero-filled
//    unless asked.
//  - CUDA (VT_CUDA builds): a caching allocator that keeps freed blocks per
//    device in size-rounded bins, so a training step that allocates the same
//    shapes every iteration calls cudaMalloc only in the first step.
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

// Both throw std::runtime_error in builds without VT_CUDA or when the device
// is out of memory (the message gives the size asked and the bytes cached).
//
// Streams (the same contract as PyTorch's CUDACachingAllocator): a block
// belongs to the stream it was allocated on. cuda_free returns it to that
// stream's cache at once, without synchronising: kernels queued on the same
// stream before the free still run before any later user of the block, so
// the block is handed out again only to allocations on that same stream.
// A block that was also used on other streams must be declared with
// cuda_record_stream before it is freed; its free then records an event on
// each of those streams, and the block becomes reusable (on its own stream)
// only once all those events have completed (polled, never waited for, by
// later cuda_alloc calls). The cache is shared by all host threads (a mutex).
// Throws vt::OutOfMemory (a std::bad_alloc naming the size, the device and
// the bytes in use) when the device has no room even after the cache was
// given back; Tensor::empty adds the tensor's shape and dtype.
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
// Releases every cached (unused) CUDA block back to the driver (waiting for
// the events of blocks freed across streams).
void cuda_empty_cache();
// Bytes currently handed out / held in the cache, per all devices.
size_t cuda_bytes_in_use();
size_t cuda_bytes_cached();  // includes blocks waiting for their events
// Highest cuda_bytes_in_use() since the start or the last reset (the
// trainers' "peak GPU memory"); cudaMalloc calls made by the cache so far
// (a steady-state training step makes none: workspaces are planned once).
size_t cuda_peak_bytes_in_use();
void cuda_reset_peak_bytes();
size_t cuda_malloc_calls();

// Name and total memory of a CUDA device (throws std::runtime_error without
// one).
struct CudaDeviceInfo {
  std::string name;
  size_t total_bytes = 0;
};
CudaDeviceInfo cuda_device_info(int device);
// Bytes a new allocation on `device` can still get: the runtime's free
// memory (cudaMemGetInfo) plus what this process's cache holds unused and
// would give back. Throws std::runtime_error when the runtime cannot say, or
// without VT_CUDA.
size_t cuda_free_bytes(int device);

// Whether a CUDA device is visible (false in builds without VT_CUDA).
bool cuda_available();
int cuda_device_count();
// Makes `device` current for this host thread (kernels launch there);
// throws std::runtime_error when that fails or without VT_CUDA.
void cuda_set_device(int device);

}  // namespace vt
