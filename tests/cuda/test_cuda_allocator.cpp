// The caching CUDA allocator (core/allocator.h): its stream contract (a
// freed block is reused on its own stream only, and a block declared used
// on another stream with cuda_record_stream only after that stream's event
// has completed), and PyTorch's block algorithm: 512-byte rounding, the
// segment sizes, best fit, splitting, merging, the bound on cached bytes
// and the retry after cudaMalloc refuses. Block identity is observed
// through the returned pointers, the segments through cuda_cache_stats();
// each expected pointer and count follows from the sizes asked (the rules
// in the header), not from a run. A fresh stream per test holds only the
// test's own blocks, so no other test's cached memory can serve them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>

#include <cuda_runtime_api.h>

#include "core/out_of_memory.h"
#include "cuda_test_util.h"

#ifdef VT_CUDA_EMU
void vt_emu_hold_events(bool hold);  // tests/cuda/emu/runtime.cpp
size_t vt_emu_malloc_count();        // tests/cuda/emu/runtime.cpp
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
  const size_t m0 = cuda_malloc_calls();
  void* p = cuda_alloc(kBytes, 0, s.a);
  cuda_free(p, 0);
  void* q = cuda_alloc(kBytes, 0, s.b);  // another stream: a new block, of a segment of its own
  EXPECT_NE(q, p);
  EXPECT_EQ(cuda_malloc_calls(), m0 + 2);
  void* r = cuda_alloc(kBytes, 0, s.a);  // its own stream: the cached block
  EXPECT_EQ(r, p);
  cuda_free(q, 0);
  cuda_free(r, 0);
}

// The default stream is each host thread's own (per-thread default
// streams): a block a thread freed on it (its kernels may still be queued)
// is not handed to another thread's default stream, whichever thread frees
// it, and comes back to its own thread's. Sizes no other test asks for.
TEST(CudaAllocator, DefaultStreamBlocksStayWithTheirThread) {
  VT_SKIP_WITHOUT_GPU();
  constexpr size_t kOdd = 131 * 512 + 3;
  void* p = cuda_alloc(kOdd, 0, nullptr);
  cuda_free(p, 0);
  void* q = nullptr;
  std::thread([&] { q = cuda_alloc(kOdd, 0, nullptr); }).join();
  EXPECT_NE(q, p) << "another thread's default stream got a block this thread's stream may still use";
  EXPECT_EQ(cuda_alloc(kOdd, 0, cudaStreamPerThread), p);  // by its name too: this thread's
  // Freed by another thread, q goes back to its allocating thread's cache,
  // which this thread does not draw from.
  std::thread([&] { cuda_free(q, 0); }).join();
  void* r = cuda_alloc(kOdd, 0, nullptr);
  EXPECT_NE(r, q);
  cuda_free(p, 0);
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
  // Large enough that no free block of another test on the compute stream
  // fits it (best fit would take one): 48 MiB + 512 in a 50 MiB segment,
  // twice that in a 98 MiB one.
  constexpr size_t kPoolBytes = (size_t(48) << 20) + 3;
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
  // Released: both blocks are cached for the compute stream (the two
  // smallest fitting blocks there are a's and outside's segments, then
  // kept's and outside2's: each of a and kept comes back to one of two).
  void* c1 = cuda_alloc(kPoolBytes, 0);
  void* c2 = cuda_alloc(kPoolBytes, 0);
  EXPECT_TRUE(c1 == a || c2 == a);
  void* k1 = cuda_alloc(kPoolBytes * 2, 0);
  void* k2 = cuda_alloc(kPoolBytes * 2, 0);
  EXPECT_TRUE(k1 == kept || k2 == kept);
  for (void* p : {c1, c2, k1, k2}) cuda_free(p, 0);
}

constexpr size_t KiB = size_t(1) << 10, MiB = size_t(1) << 20;

struct Stream {
  cudaStream_t s = nullptr;
  Stream() { cudaStreamCreate(&s); }
  ~Stream() { cudaStreamDestroy(s); }
};

char* alloc_on(size_t bytes, const Stream& st) { return static_cast<char*>(cuda_alloc(bytes, 0, st.s)); }

// Small requests (<= 1 MiB) are rounded to 512 bytes and cut, one after
// another, from one 2 MiB segment.
TEST(CudaAllocator, SmallRequestsAreCutFromOneTwoMiBSegment) {
  VT_SKIP_WITHOUT_GPU();
  Stream st;
  const CudaCacheStats s0 = cuda_cache_stats();
  char* a = alloc_on(1000, st);     // 1024 bytes, from a new 2 MiB segment
  char* b = alloc_on(3000, st);     // 3072, the rest after a
  char* c = alloc_on(1, st);        // 512, the minimum
  char* d = alloc_on(1 * MiB, st);  // the largest small request
  EXPECT_EQ(b, a + 1024);
  EXPECT_EQ(c, a + 4096);
  EXPECT_EQ(d, a + 4608);
  const CudaCacheStats s1 = cuda_cache_stats();
  const size_t used = 1024 + 3072 + 512 + MiB;
  EXPECT_EQ(s1.malloc_calls - s0.malloc_calls, 1u);
  EXPECT_EQ(s1.segments - s0.segments, 1u);
  EXPECT_EQ(s1.reserved_bytes - s0.reserved_bytes, 2 * MiB);
  EXPECT_EQ(s1.in_use_bytes - s0.in_use_bytes, used);
  EXPECT_EQ(s1.cached_bytes - s0.cached_bytes, 2 * MiB - used);
  for (char* p : {a, b, c, d}) cuda_free(p, 0);
}

// Large requests: under 10 MiB a 20 MiB segment, split while the rest is
// over 1 MiB; from 10 MiB a segment of the size rounded to 2 MiB; a rest of
// at most 1 MiB stays with its block (counted in use). The pools never lend
// to each other.
TEST(CudaAllocator, LargeRequestsSegmentsAndSplitRule) {
  VT_SKIP_WITHOUT_GPU();
  Stream st;
  const CudaCacheStats s0 = cuda_cache_stats();
  char* p = alloc_on(5 * MiB, st);             // a 20 MiB segment; the 15 MiB rest is split off
  char* q = alloc_on(14 * MiB + 512 * KiB, st);  // best fit: that rest; its 0.5 MiB rest stays with q
  EXPECT_EQ(q, p + 5 * MiB);
  CudaCacheStats s1 = cuda_cache_stats();
  EXPECT_EQ(s1.malloc_calls - s0.malloc_calls, 1u);
  EXPECT_EQ(s1.in_use_bytes - s0.in_use_bytes, 20 * MiB);
  EXPECT_EQ(s1.cached_bytes, s0.cached_bytes);
  char* r = alloc_on(10 * MiB, st);        // from 10 MiB: a segment of exactly 10 MiB
  char* t = alloc_on(11 * MiB + 1, st);    // 11 MiB + 512: a 12 MiB segment, the rest (< 1 MiB) stays with it
  s1 = cuda_cache_stats();
  EXPECT_EQ(s1.malloc_calls - s0.malloc_calls, 3u);
  EXPECT_EQ(s1.reserved_bytes - s0.reserved_bytes, 42 * MiB);
  EXPECT_EQ(s1.in_use_bytes - s0.in_use_bytes, 42 * MiB);
  cuda_free(p, 0);                // 5 MiB free in the large pool
  char* u = alloc_on(512 * KiB, st);  // small: a new 2 MiB segment, not a piece of p
  EXPECT_TRUE(u < p || u >= p + 5 * MiB);
  EXPECT_EQ(cuda_cache_stats().malloc_calls - s0.malloc_calls, 4u);
  for (char* x : {q, r, t, u}) cuda_free(x, 0);
}

// Best fit: the smallest free block that holds the rounded request, its
// rest split off and served next.
TEST(CudaAllocator, BestFitTakesTheSmallestFreeBlockThatFits) {
  VT_SKIP_WITHOUT_GPU();
  Stream st;
  const size_t m0 = cuda_malloc_calls();
  char* x = alloc_on(4096, st);
  char* s1 = alloc_on(512, st);  // separators: keep the holes apart
  char* y = alloc_on(2048, st);
  char* s2 = alloc_on(512, st);
  char* z = alloc_on(8192, st);
  char* s3 = alloc_on(512, st);
  ASSERT_EQ(z, x + 4096 + 512 + 2048 + 512);
  for (char* p : {x, y, z}) cuda_free(p, 0);  // holes of 4096, 2048, 8192 and the segment's rest
  EXPECT_EQ(alloc_on(1536, st), y);          // 2048 is the smallest that fits; 512 left at y + 1536
  EXPECT_EQ(alloc_on(3000, st), x);          // 3072: 4096 (512 is too small); 1024 left at x + 3072
  EXPECT_EQ(alloc_on(5000, st), z);          // 5120: 8192
  EXPECT_EQ(alloc_on(1024, st), x + 3072);   // exactly the rest of x
  EXPECT_EQ(alloc_on(512, st), y + 1536);    // exactly the rest of y
  EXPECT_EQ(cuda_malloc_calls(), m0 + 1);  // all from the first segment
  for (char* p : {x, y, z, s1, s2, s3, x + 3072, y + 1536}) cuda_free(p, 0);
}

// A freed block merges with its free neighbours; when the whole segment is
// free again it is one block, which cuda_empty_cache gives back.
TEST(CudaAllocator, FreedBlocksMergeWithFreeNeighbours) {
  VT_SKIP_WITHOUT_GPU();
  Stream st;
  cuda_empty_cache();  // no whole free segment of another test left
  const CudaCacheStats s0 = cuda_cache_stats();
  char* a = alloc_on(1024, st);
  char* b = alloc_on(1024, st);
  char* c = alloc_on(1024, st);
  ASSERT_EQ(b, a + 1024);
  ASSERT_EQ(c, a + 2048);
  cuda_free(b, 0);
  cuda_free(a, 0);  // merges with b: one 2048-byte block at a
  char* x = alloc_on(2048, st);
  EXPECT_EQ(x, a);  // unmerged, two 1024-byte holes: from the rest at a + 3072
  cuda_free(x, 0);
  cuda_free(c, 0);  // merges with x before it and the rest after it: the whole segment
  CudaCacheStats s1 = cuda_cache_stats();
  EXPECT_EQ(s1.segments - s0.segments, 1u);
  cuda_empty_cache();
  s1 = cuda_cache_stats();
  EXPECT_EQ(s1.segments, s0.segments);
  EXPECT_EQ(s1.reserved_bytes, s0.reserved_bytes);
  EXPECT_EQ(s1.free_calls - s0.free_calls, 1u);
}

// The bound on cached bytes for one scope.
struct CacheBound {
  explicit CacheBound(size_t bytes) { cuda_set_max_cached_bytes(bytes); }
  ~CacheBound() { cuda_set_max_cached_bytes(SIZE_MAX); }
};

// Past the bound, whole free segments are given back, the least recently
// freed first; lowering the bound gives back at once.
TEST(CudaAllocator, CachedBytesBoundGivesBackTheOldestFreeSegments) {
  VT_SKIP_WITHOUT_GPU();
  Stream st;
  cuda_empty_cache();
  const CudaCacheStats s0 = cuda_cache_stats();  // cached: free pieces of other tests' segments
  CacheBound bound(s0.cached_bytes + 30 * MiB);
  char* a = alloc_on(12 * MiB, st);  // three segments of exactly 12 MiB
  char* b = alloc_on(12 * MiB, st);
  char* c = alloc_on(12 * MiB, st);
  cuda_free(a, 0);
  cuda_free(b, 0);  // 24 MiB cached
  EXPECT_EQ(cuda_cache_stats().free_calls, s0.free_calls);
  cuda_free(c, 0);  // 36 MiB > 30: a's segment (freed first) goes
  CudaCacheStats s1 = cuda_cache_stats();
  EXPECT_EQ(s1.free_calls - s0.free_calls, 1u);
  EXPECT_EQ(s1.segments - s0.segments, 2u);
  EXPECT_EQ(s1.cached_bytes - s0.cached_bytes, 24 * MiB);
  EXPECT_EQ(s1.max_cached_bytes, s0.cached_bytes + 30 * MiB);
  char* d = alloc_on(12 * MiB, st);  // from the cache: b's or c's, the lower address (best fit's tie)
  EXPECT_EQ(d, std::min(b, c));
  EXPECT_EQ(cuda_cache_stats().malloc_calls - s0.malloc_calls, 3u);
  cuda_set_max_cached_bytes(s0.cached_bytes);  // the other one goes at once
  s1 = cuda_cache_stats();
  EXPECT_EQ(s1.free_calls - s0.free_calls, 2u);
  EXPECT_EQ(s1.cached_bytes, s0.cached_bytes);
  cuda_free(d, 0);  // over the bound as soon as it is free
  s1 = cuda_cache_stats();
  EXPECT_EQ(s1.free_calls - s0.free_calls, 3u);
  EXPECT_EQ(s1.segments, s0.segments);
}

#ifdef VT_CUDA_EMU
// The emulated device's memory for one scope (VT_EMU_MEMORY_BYTES: a
// cudaMalloc past it fails with cudaErrorMemoryAllocation).
struct DeviceMemory {
  explicit DeviceMemory(size_t bytes) { setenv("VT_EMU_MEMORY_BYTES", std::to_string(bytes).c_str(), 1); }
  ~DeviceMemory() { unsetenv("VT_EMU_MEMORY_BYTES"); }
};

// When cudaMalloc refuses, the cache gives its whole free segments back and
// tries again (PyTorch's release_cached_blocks); when that fails too, the
// error names the request, the bytes in use and cached, the segment asked
// and what was given back.
TEST(CudaAllocator, OutOfMemoryGivesTheCacheBackRetriesThenNamesTheRequest) {
  Stream st;
  cuda_empty_cache();
  size_t free = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free, &total), cudaSuccess);
  DeviceMemory mem(total - free + 40 * MiB);  // 40 MiB beyond what is live now
  const CudaCacheStats s0 = cuda_cache_stats();
  const size_t e0 = vt_emu_malloc_count();
  char* a = alloc_on(12 * MiB, st);
  char* b = alloc_on(12 * MiB, st);  // a second segment: 24 MiB live
  cuda_free(a, 0);
  cuda_free(b, 0);  // both cached
  char* c = alloc_on(30 * MiB, st);  // 54 MiB > 40: refused; both segments given back; 30 MiB fits
  CudaCacheStats s1 = cuda_cache_stats();
  EXPECT_EQ(s1.malloc_calls - s0.malloc_calls, 4u);  // 12, 12, 30 refused, 30
  EXPECT_EQ(vt_emu_malloc_count() - e0, 4u);
  EXPECT_EQ(s1.free_calls - s0.free_calls, 2u);
  EXPECT_EQ(s1.segments - s0.segments, 1u);
  EXPECT_EQ(s1.reserved_bytes - s0.reserved_bytes, 30 * MiB);
  cuda_free(alloc_on(10 * MiB, st), 0);  // the last 10 MiB, cached
  try {
    alloc_on(12 * MiB, st);  // 52 MiB: refused; the 10 MiB given back; 42 MiB: refused again
    FAIL() << "allocated past the device's memory";
  } catch (const OutOfMemory& e) {
    EXPECT_EQ(std::string(e.what()),
              "CUDA out of memory: asked 12582912 bytes on cuda:0 with " +
                  std::to_string(s0.in_use_bytes + 30 * MiB) + " bytes in use and " +
                  std::to_string(s0.cached_bytes) + " bytes cached (free pieces of " +
                  std::to_string(s0.segments + 1) +
                  " segments in use); cudaMalloc refused a 12582912-byte segment, also after the cache gave back "
                  "10485760 bytes (1 free segments) (" +
                  cudaGetErrorString(cudaErrorMemoryAllocation) + ")");
  }
  s1 = cuda_cache_stats();
  EXPECT_EQ(s1.malloc_calls - s0.malloc_calls, 7u);
  EXPECT_EQ(vt_emu_malloc_count() - e0, 7u);
  EXPECT_EQ(s1.free_calls - s0.free_calls, 3u);
  cuda_free(c, 0);
}
#endif

}  // namespace
}  // namespace vt
