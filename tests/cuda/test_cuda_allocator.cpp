// The caching CUDA allocator's stream contract (core/allocator.h, "Streams"):
// a freed block is reused on its own stream only, and a block declared used
// on another stream (cuda_record_stream) only after that stream's event has
// completed. Block identity is observed through the returned pointers.
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include "cuda_test_util.h"

#ifdef VT_CUDA_EMU
void vt_emu_hold_events(bool hold);  // tests/cuda/emu/runtime.cpp
#endif

namespace vt {
namespace {

struct Streams {
  cudaStream_t a = nullptr, b = nullptr;
  Streams() {
    cudaStreamCreate(&a);
    cudaStreamCreate(&b);
  }
  ~Streams() {
    cudaStreamDestroy(a);
    cudaStreamDestroy(b);
  }
};

// An odd size no other test asks for, so the cache holds no other block of it.
constexpr size_t kBytes = 123 * 512 + 7;

TEST(CudaAllocator, FreedBlockIsReusedOnItsOwnStreamOnly) {
  VT_SKIP_WITHOUT_GPU();
  Streams s;
  void* p = cuda_alloc(kBytes, 0, s.a);
  cuda_free(p, 0);
  void* q = cuda_alloc(kBytes, 0, s.b);  // another stream: a new block
  EXPECT_NE(q, p);
  void* r = cuda_alloc(kBytes, 0, s.a);  // its own stream: the cached block
  EXPECT_EQ(r, p);
  cuda_free(q, 0);
  cuda_free(r, 0);
}

TEST(CudaAllocator, RecordedStreamDefersReuseUntilItsEventCompletes) {
  VT_SKIP_WITHOUT_GPU();
  Streams s;
  const size_t cached0 = cuda_bytes_cached();
  void* p = cuda_alloc(kBytes + 512, 0, s.a);
  cuda_record_stream(p, s.b);
#ifdef VT_CUDA_EMU
  vt_emu_hold_events(true);  // the work on stream b is still running
  cuda_free(p, 0);
  EXPECT_GT(cuda_bytes_cached(), cached0);  // cached, but not yet reusable
  void* early = cuda_alloc(kBytes + 512, 0, s.a);
  EXPECT_NE(early, p);
  vt_emu_hold_events(false);
  cudaStreamSynchronize(s.b);  // b's work done: its event has completed (not merely "soon")
#else
  cuda_free(p, 0);
  cudaStreamSynchronize(s.b);
#endif
  void* late = cuda_alloc(kBytes + 512, 0, s.a);  // b's event has completed
  EXPECT_EQ(late, p);
  cuda_free(late, 0);
#ifdef VT_CUDA_EMU
  cuda_free(early, 0);
#endif
}

// A CUDA Graph capture's private pool (cuda_capture_pool_begin): blocks
// allocated while it is open are reused only by that capture's own
// allocations, whoever frees them and when, until the pool is released;
// then they are the compute stream's cached blocks again.
TEST(CudaAllocator, CapturePoolBlocksStayWithTheirGraphUntilReleased) {
  VT_SKIP_WITHOUT_GPU();
  constexpr size_t kPoolBytes = 321 * 512 + 3;  // no other test's size
  CudaStreamHandle pool = cuda_capture_pool_begin();
  void* a = cuda_alloc(kPoolBytes, 0);
  cuda_free(a, 0);
  void* b = cuda_alloc(kPoolBytes, 0);  // inside the capture: its own freed block
  EXPECT_EQ(b, a);
  void* kept = cuda_alloc(kPoolBytes * 2, 0);  // lives on after the capture
  cuda_capture_pool_end();
  cuda_free(b, 0);
  cuda_free(kept, 0);
  void* outside = cuda_alloc(kPoolBytes, 0);  // the graph still uses a: a new block
  void* outside2 = cuda_alloc(kPoolBytes * 2, 0);
  EXPECT_NE(outside, a);
  EXPECT_NE(outside2, kept);
  cuda_free(outside, 0);
  cuda_free(outside2, 0);
  cuda_capture_pool_release(pool);
  // Released: both blocks are cached for the compute stream (one of the two
  // blocks of each size comes back; the cache keeps both).
  void* c1 = cuda_alloc(kPoolBytes, 0);
  void* c2 = cuda_alloc(kPoolBytes, 0);
  EXPECT_TRUE(c1 == a || c2 == a);
  void* k1 = cuda_alloc(kPoolBytes * 2, 0);
  void* k2 = cuda_alloc(kPoolBytes * 2, 0);
  EXPECT_TRUE(k1 == kept || k2 == kept);
  for (void* p : {c1, c2, k1, k2}) cuda_free(p, 0);
}

}  // namespace
}  // namespace vt
