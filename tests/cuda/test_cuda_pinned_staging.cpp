// core/pinned_staging.h: a staging block goes back to the cache only once
// the copy that read it has completed, so refilling it never changes what a
// queued copy uploads; a steady stream of uploads reuses a few blocks; the
// uploads read page-locked memory, never pageable. Under the emulator's
// asynchronous orders (VT_EMU_STREAMS=random|delayed) the copies run long
// after they were queued, so a block handed out too early shows as a wrong
// row; "a copy still running" is also simulated by holding every event
// not ready (vt_emu_hold_events).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <set>
#include <vector>

#include "core/cuda_stream.h"
#include "core/pinned_staging.h"
#include "cuda_test_util.h"

#ifdef VT_CUDA_EMU
void vt_emu_hold_events(bool hold);    // tests/cuda/emu/runtime.cpp
size_t vt_emu_pageable_h2d_count();   // tests/cuda/emu/runtime.cpp
#endif

namespace vt {
namespace {

// Queues the upload of `n` int32 of value `v` through `staging` into `dst` on `s`.
void upload(PinnedStaging& staging, int32_t* dst, size_t n, int32_t v, const CudaStream& s) {
  int32_t* p = static_cast<int32_t*>(staging.acquire(n * sizeof(int32_t)));
  for (size_t i = 0; i < n; ++i) p[i] = v;
  ASSERT_EQ(cudaMemcpyAsync(dst, p, n * sizeof(int32_t), cudaMemcpyHostToDevice,
                            static_cast<cudaStream_t>(s.handle())),
            cudaSuccess);
  staging.queued(s.handle());
}

// 64 uploads queued back to back, each from a block refilled with its own
// value: every row holds its value once the stream has run.
TEST(PinnedStaging, QueuedCopiesKeepTheirValues) {
  VT_SKIP_WITHOUT_GPU();
  constexpr int kRows = 64;
  constexpr size_t kN = 20000;  // 80 KB: above the smallest block
  CudaStream s = CudaStream::create(0);
  const Tensor dev = cuda_empty_on({kRows, static_cast<int64_t>(kN)}, DType::I32, 0, s.handle());
  PinnedStaging staging(0);
#ifdef VT_CUDA_EMU
  const size_t pageable = vt_emu_pageable_h2d_count();
#endif
  for (int r = 0; r < kRows; ++r) upload(staging, dev.data<int32_t>() + r * kN, kN, 1000 + r, s);
  s.synchronize();
#ifdef VT_CUDA_EMU
  EXPECT_EQ(vt_emu_pageable_h2d_count(), pageable);
#endif
  std::vector<int32_t> host(kRows * kN);
  ASSERT_EQ(cudaMemcpy(host.data(), dev.raw(), host.size() * sizeof(int32_t), cudaMemcpyDeviceToHost), cudaSuccess);
  for (int r = 0; r < kRows; ++r)
    for (size_t i = 0; i < kN; i += 997) ASSERT_EQ(host[r * kN + i], 1000 + r) << "row " << r << " element " << i;
}

// Waiting for the stream every other upload, a loop of 200 uploads of
// varying sizes (4 to 244 KB: blocks of 64, 128 and 256 KiB) keeps to the
// blocks in flight at once: at most two of each size (both uploads
// between two waits may need the same size while the other blocks are
// too small), where a block per upload would be 200.
TEST(PinnedStaging, SteadyStateReusesItsBlocks) {
  VT_SKIP_WITHOUT_GPU();
  CudaStream s = CudaStream::create(0);
  const Tensor dev = cuda_empty_on({1 << 18}, DType::I32, 0, s.handle());
  PinnedStaging staging(0);
  for (int i = 0; i < 200; ++i) {
    upload(staging, dev.data<int32_t>(), static_cast<size_t>(1000 + (i * 7919) % 60000), i, s);
    if (i % 2 == 1) s.synchronize();
  }
  EXPECT_LE(staging.blocks(), 6u);
}

#ifdef VT_CUDA_EMU
// While a block's event is not ready, acquire hands out another block; once
// it is, the first comes back (best fit: the smallest free block that holds
// the request).
TEST(PinnedStaging, ABlockInFlightIsNotHandedOut) {
  CudaStream s = CudaStream::create(0);
  const Tensor dev = cuda_empty_on({1 << 16}, DType::I32, 0, s.handle());
  PinnedStaging staging(0);
  std::set<void*> seen;
  {
    vt_emu_hold_events(true);
    for (int i = 0; i < 4; ++i) {
      void* p = staging.acquire(4096);
      EXPECT_TRUE(seen.insert(p).second) << "block " << p << " handed out again while its copy is queued";
      ASSERT_EQ(cudaMemcpyAsync(dev.raw(), p, 4096, cudaMemcpyHostToDevice, static_cast<cudaStream_t>(s.handle())),
                cudaSuccess);
      staging.queued(s.handle());
    }
    vt_emu_hold_events(false);
  }
  s.synchronize();
  EXPECT_EQ(staging.blocks(), 4u);
  EXPECT_EQ(seen.count(staging.acquire(4096)), 1u);  // an old block, no new one
  staging.queued(s.handle());
  EXPECT_EQ(staging.blocks(), 4u);
  // An acquired block that is not yet queued is never handed out twice.
  void* a = staging.acquire(100);
  void* b = staging.acquire(100);
  EXPECT_NE(a, b);
  staging.queued(s.handle());
  s.synchronize();
  // Larger than every block: a new one, rounded up to a power of two.
  staging.acquire(size_t(1) << 20 | 1);
  EXPECT_EQ(staging.blocks(), 5u);
  staging.queued(s.handle());
}
#endif

}  // namespace
}  // namespace vt
