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

}  // namespace
}  // namespace vt
