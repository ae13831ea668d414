// CUDA streams and events behind opaque handles (so this header needs no
// CUDA headers), for work that overlaps the compute stream: the batch
// upload (data_pipeline/batch_upload.h). The op library's kernels run on
// the default stream (CudaStreamHandle nullptr, "the compute stream"; the
// build makes it the per-thread default stream, CMakeLists.txt); a stream
// made here is non-blocking, i.e. it does not synchronise implicitly with
// the default stream (CUDA Runtime API, "Stream synchronization
// behavior"), so ordering between the two is exactly the events recorded
// and waited for.
//
// Every call throws std::runtime_error naming the CUDA call and its error;
// in a build without CUDA, creating a stream or event throws ("this build
// has no CUDA support").
#pragma once
#include "core/allocator.h"
#include "core/tensor.h"

namespace vt {

class CudaStream {
 public:
  CudaStream() = default;  // no stream
  // A new non-blocking stream on `device` (the current device is restored).
  static CudaStream create(int device);
  ~CudaStream();
  CudaStream(CudaStream&& o) noexcept;
  CudaStream& operator=(CudaStream&& o) noexcept;
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  CudaStreamHandle handle() const { return stream_; }
  void synchronize() const;  // waits on the host for all work queued so far

 private:
  CudaStreamHandle stream_ = nullptr;
  int device_ = 0;
};

class CudaEvent {
 public:
  CudaEvent() = default;  // no event
  static CudaEvent create(int device);  // timing disabled (cheapest record and wait)
  // An event that records a timestamp, for elapsed_ms (benchmarks).
  static CudaEvent create_timing(int device);
  ~CudaEvent();
  CudaEvent(CudaEvent&& o) noexcept;
  CudaEvent& operator=(CudaEvent&& o) noexcept;
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  bool defined() const { return event_ != nullptr; }

  // Captures the work queued on `stream` so far (an event made by create).
  void record(CudaStreamHandle stream);
  // Makes later work queued on `stream` wait for the recorded work (on the
  // device; the host does not block).
  void wait_on(CudaStreamHandle stream) const;
  // Whether the recorded work has completed (never blocks; true for an
  // event never recorded or never created; wait_on and synchronize of
  // such an event do nothing).
  bool query() const;
  void synchronize() const;  // blocks the host until the recorded work completed
  void* handle() const { return event_; }  // the cudaEvent_t

 private:
  void* event_ = nullptr;
};

// Milliseconds of device time between two recorded timing events
// (cudaEventElapsedTime; waits on the host for `end`). Throws
// std::runtime_error for events made without timing or never recorded.
float elapsed_ms(const CudaEvent& start, const CudaEvent& end);

// Queues a copy of `src` into `dst` on `stream` (cudaMemcpyAsync): same
// shape and dtype, both contiguous, at least one on CUDA. The host memory of
// a host-to-device copy must stay untouched until the copy completed (an
// event recorded after it); it overlaps other streams' work only when that
// memory is pinned (core/pinned_memory.h).
void copy_async(const Tensor& dst, const Tensor& src, CudaStreamHandle stream);

// A contiguous tensor on CUDA `device` whose memory the caching allocator
// hands out on `stream` (core/allocator.h, "Streams"), for work queued on a
// stream other than the compute stream: when the last reference goes, the
// block returns to that stream's cache, so it is reused only by later work
// on `stream`, never while that stream's queued work may still use it.
// Throws as cuda_alloc (vt::OutOfMemory; no CUDA in the build).
Tensor cuda_empty_on(const Shape& shape, DType dtype, int device, CudaStreamHandle stream);

}  // namespace vt
