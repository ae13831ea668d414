#include "core/pinned_memory.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "core/allocator.h"

#ifdef VT_CUDA
#include <cuda_runtime.h>
#endif

namespace vt {

PinnedBuffer::PinnedBuffer(size_t bytes) : bytes_(bytes) {
#ifdef VT_CUDA
  if (cuda_available()) {
    void* p = nullptr;
    const cudaError_t e = cudaHostAlloc(&p, bytes == 0 ? 1 : bytes, cudaHostAllocDefault);
    if (e != cudaSuccess) {
      cudaGetLastError();
      throw std::runtime_error("cannot allocate " + std::to_string(bytes) + " bytes of pinned host memory (" +
                               cudaGetErrorString(e) + "); lower data.prefetch or the batch size");
    }
    data_ = p;
    page_locked_ = true;
    return;
  }
#endif
  data_ = cpu_alloc(bytes);
}

void PinnedBuffer::release() {
  if (!data_) return;
#ifdef VT_CUDA
  if (page_locked_) {
    cudaFreeHost(data_);
    data_ = nullptr;
    return;
  }
#endif
  cpu_free(data_);
  data_ = nullptr;
}

PinnedBuffer::~PinnedBuffer() { release(); }

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)),
      page_locked_(std::exchange(o.page_locked_, false)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    release();
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    page_locked_ = std::exchange(o.page_locked_, false);
  }
  return *this;
}

}  // namespace vt
