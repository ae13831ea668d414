// Page-locked staging for small host-to-device uploads that must not make
// the host wait: a copy from pageable memory may synchronise with the
// stream's queued work (CUDA Runtime API, "API synchronization behavior"),
// one from page-locked memory is a DMA that returns at once but reads its
// source when it runs, so that memory may be refilled only once the copy
// has completed. The same contract as PyTorch's CachingHostAllocator: a
// block handed out is reused only after an event recorded behind the work
// that reads it has completed, polled and never waited for; blocks are
// cached (best fit, sizes rounded up to a power of two, at least 64 KiB) so
// that a steady state allocates no page-locked memory.
//
// Per use: acquire() the blocks a batch of uploads needs, fill them, queue
// the copies, then queued(stream) once: every block acquired since the last
// queued() goes back to the cache behind an event on `stream`.
// Users: the pass descriptors of the u8 resampler (kernels/cuda/
// resample_u8.h), the device augmentation's arguments (kernels/cuda/
// augment.cu), the device JPEG decoder's host-decoded images
// (data_pipeline/device/device_jpeg.h).
//
// Not thread-safe: one per thread (or per owner used from one thread).
// In a build without CUDA or without a device the blocks are ordinary host
// memory (core/pinned_memory.h) and no events are recorded.
#pragma once
#include <cstddef>
#include <vector>

#include "core/cuda_stream.h"
#include "core/pinned_memory.h"

namespace vt {

class PinnedStaging {
 public:
  // `device`: the CUDA device whose streams the copies are queued on.
  explicit PinnedStaging(int device = 0);
  // Waits for the copies still reading blocks (a queued copy must not read
  // freed memory); never throws.
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // At least `bytes` of page-locked memory no queued copy reads, valid
  // until the copies reading it are queued and queued() called. Throws
  // std::runtime_error from PinnedBuffer when page-locked memory runs out.
  void* acquire(size_t bytes);
  // The blocks acquired since the last call are read by work queued on
  // `stream` so far (nullptr: the compute stream).
  void queued(CudaStreamHandle stream);

  size_t blocks() const { return blocks_.size(); }  // page-locked blocks made so far (tests)

 private:
  enum class State { Free, Acquired, InFlight };
  struct Block {
    PinnedBuffer mem;
    CudaEvent done;  // recorded behind the copies that read `mem` (InFlight)
    State state = State::Free;
  };
  int device_;
  std::vector<Block> blocks_;
};

}  // namespace vt
