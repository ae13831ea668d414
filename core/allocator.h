// Memory for tensor storage.
//  - CPU: 64-byte aligned (one cache line, AVX-512 width), never zero-filled
//    unless asked.
//  - CUDA (VT_CUDA builds): a caching allocator that keeps freed blocks per
//    device in size-rounded bins, so a training step that allocates the same
//    shapes every iteration calls cudaMalloc only in the first step.
#pragma once
#include <cstddef>

#include "core/dtype.h"

namespace vt {

void* cpu_alloc(size_t bytes);  // throws std::bad_alloc
void cpu_free(void* p);

// Both throw std::runtime_error in builds without VT_CUDA or when the device
// is out of memory (the message gives the size asked and the bytes cached).
void* cuda_alloc(size_t bytes, int device);
void cuda_free(void* p, int device);
// Releases every cached (unused) CUDA block back to the driver.
void cuda_empty_cache();
// Bytes currently handed out / held in the cache, per all devices.
size_t cuda_bytes_in_use();
size_t cuda_bytes_cached();

// Whether a CUDA device is visible (false in builds without VT_CUDA).
bool cuda_available();
int cuda_device_count();

}  // namespace vt
