// Page-locked ("pinned") host memory for host-to-device copies that run
// asynchronously: cudaMemcpyAsync from pageable memory is staged through a
// driver buffer and does not overlap host work, from pinned memory it is a
// DMA on the copy engine (CUDA C++ Programming Guide, "Page-Locked Host
// Memory"). The loader's batch slots (data_pipeline/loader.h) live here when
// a GPU run uploads them (data_pipeline/batch_upload.h).
//
// In a build without CUDA, or when no CUDA device is visible, the memory is
// ordinary 64-byte aligned host memory (cpu_alloc): page-locking only
// matters to a GPU, and the same code paths then run on any machine.
#pragma once
#include <cstddef>

namespace vt {

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  // Throws std::runtime_error naming the size when cudaHostAlloc fails
  // (page-locked memory is limited by the OS), std::bad_alloc otherwise.
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& o) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // True when the memory is page-locked by CUDA (cudaHostAlloc).
  bool page_locked() const { return page_locked_; }

 private:
  void release();
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool page_locked_ = false;
};

}  // namespace vt
