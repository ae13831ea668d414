// core/cuda_stream.h and core/pinned_memory.h, the pieces of the batch
// upload (data_pipeline/batch_upload.h) below the loader: a pinned buffer
// copied on a non-blocking stream, the compute stream ordered after the copy
// by an event, a kernel reading the copy there. On a GPU a missing wait
// shows as stale values (the copy is large, the kernel is queued at once);
// the emulator runs everything at the call and checks the plumbing.
#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>

#include "core/cuda_stream.h"
#include "core/pinned_memory.h"
#include "cuda_test_util.h"
#include "kernels/elementwise.h"

#ifdef VT_CUDA_EMU
void vt_emu_hold_events(bool hold);  // tests/cuda/emu/runtime.cpp
#endif

namespace vt {
namespace {

TEST(CudaStream, PinnedCopyOrderedBeforeTheComputeStreamByAnEvent) {
  VT_SKIP_WITHOUT_GPU();
#ifdef VT_CUDA_EMU
  const int64_t n = 4096;  // every CUDA thread is a host fiber
#else
  const int64_t n = int64_t(1) << 24;  // 64 MiB: the copy takes a while on any bus
#endif
  PinnedBuffer pinned(static_cast<size_t>(n) * sizeof(float));
  EXPECT_TRUE(pinned.page_locked());
  const Tensor host = Tensor::wrap(pinned.data(), {n}, DType::F32);
  for (int64_t i = 0; i < n; ++i) host.f32()[i] = static_cast<float>(i % 1000) + 0.25f;
  Tensor dev = Tensor::zeros({n}, DType::F32, Device::cuda(0));
  Tensor out = Tensor::empty({n}, DType::F32, Device::cuda(0));
  CudaStream up = CudaStream::create(0);
  ASSERT_NE(up.handle(), nullptr);
  // The zero-fill ran on the compute stream; the non-blocking upload stream
  // is not ordered after it unless told (core/cuda_stream.h), and a fill
  // landing after the copy would read as a missing wait below.
  CudaEvent zeroed = CudaEvent::create(0);
  zeroed.record(nullptr);
  zeroed.wait_on(up.handle());
  CudaEvent copied = CudaEvent::create(0);
  cuda_record_stream(dev.raw(), up.handle());
  copy_async(dev, host, up.handle());
  copied.record(up.handle());
  copied.wait_on(nullptr);  // the compute stream (the op library's) waits for the copy
  scale(dev, 2.0f, out);
  const std::vector<float> got = out.to_vector();  // synchronises with the compute stream
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += got[static_cast<size_t>(i)] != 2.0f * (static_cast<float>(i % 1000) + 0.25f);
  EXPECT_EQ(bad, 0) << "elements read before the copy completed";
  copied.synchronize();
  EXPECT_TRUE(copied.query());
}

// Timing events (the step benchmarks' clock): the time between two
// records spans the work queued between them; undefined events are refused.
TEST(CudaStream, TimingEventsMeasureTheWorkBetweenThem) {
  VT_SKIP_WITHOUT_GPU();
#ifdef VT_CUDA_EMU
  const int64_t n = 1 << 14;
#else
  const int64_t n = int64_t(1) << 26;  // 256 MiB read and written 8 times: well above a millisecond
#endif
  Tensor x = Tensor::full({n}, 1.0f, Device::cuda(0));
  CudaEvent a = CudaEvent::create_timing(0), b = CudaEvent::create_timing(0), c = CudaEvent::create_timing(0);
  a.record(nullptr);
  b.record(nullptr);  // nothing between a and b
  for (int i = 0; i < 8; ++i) scale(x, 1.0f, x);
  c.record(nullptr);
  const float idle = elapsed_ms(a, b), busy = elapsed_ms(b, c);
  EXPECT_GE(idle, 0.0f);
  EXPECT_GT(busy, 0.0f);
  EXPECT_GT(busy, idle);
  EXPECT_THROW(elapsed_ms(CudaEvent(), c), std::logic_error);
}

TEST(CudaStream, DeviceToHostAndEventQueries) {
  VT_SKIP_WITHOUT_GPU();
  const Tensor src = Tensor::full({3, 5}, 1.5f, Device::cuda(0));
  PinnedBuffer pinned(15 * sizeof(float));
  const Tensor dst = Tensor::wrap(pinned.data(), {3, 5}, DType::F32);
  CudaStream s = CudaStream::create(0);
  CudaEvent e = CudaEvent::create(0);
  EXPECT_TRUE(e.query());  // never recorded
  CudaEvent filled = CudaEvent::create(0);  // src is written on the compute stream: s waits for it
  filled.record(nullptr);
  filled.wait_on(s.handle());
  copy_async(dst, src, s.handle());
  e.record(s.handle());
  e.synchronize();
  EXPECT_TRUE(e.query());
  for (int i = 0; i < 15; ++i) EXPECT_EQ(dst.f32()[i], 1.5f);
#ifdef VT_CUDA_EMU
  vt_emu_hold_events(true);  // the emulator can hold work "running"
  EXPECT_FALSE(e.query());
  vt_emu_hold_events(false);
#endif
  EXPECT_TRUE(CudaEvent().query());  // no event: nothing to wait for
}

TEST(CudaStream, CopyAsyncRejectsMismatches) {
  VT_SKIP_WITHOUT_GPU();
  CudaStream s = CudaStream::create(0);
  const Tensor d = Tensor::empty({4}, DType::F32, Device::cuda(0));
  EXPECT_THROW(copy_async(d, Tensor::empty({5}), s.handle()), std::invalid_argument);
  EXPECT_THROW(copy_async(d, Tensor::empty({4}, DType::I32), s.handle()), std::invalid_argument);
  EXPECT_THROW(copy_async(Tensor::empty({4}), Tensor::empty({4}), s.handle()), std::invalid_argument);
  const Tensor wide = Tensor::empty({4, 2}, DType::F32, Device::cuda(0));
  EXPECT_THROW(copy_async(d, wide.select(1, 0), s.handle()), std::invalid_argument);  // strided
}

}  // namespace
}  // namespace vt
