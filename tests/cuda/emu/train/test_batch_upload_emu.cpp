// The pinned upload ring (data_pipeline/batch_upload.h) on emulated CUDA.
// Under VT_EMU_STREAMS=random|delayed the copies run out of order with the
// host (emu_streams.h): a batch read before the compute stream reached it
// would be wrong. The ordering is also checked on the sequence of
// asynchronous calls (emu_trace.h), and "a copy still running" is simulated
// by holding every event not ready (vt_emu_hold_events). Batches come from a dataset whose
// samples say which they are (tests/data/counting_dataset.h).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../emu_trace.h"
#include "core/allocator.h"
#include "data/counting_dataset.h"
#include "data_pipeline/loader.h"
#include "data_pipeline/batch_upload.h"

namespace vt {
namespace {

using vt_test::CountingDataset;

constexpr int kBatch = 4;

LoaderConfig ring_config() {
  LoaderConfig c;
  c.batch_size = kBatch;
  c.workers = 2;
  c.prefetch = 2;
  c.seed = 9;
  c.pinned_slots = true;
  return c;
}

// "Device" memory is host memory in the emulator: the uploaded batch is read
// in place, once the compute stream (which waits for the batch's copy, as
// the step's kernels do) has run. Row j of batch b of `order` is dataset
// index order[b * B + j].
// Blocks until `stream` (nullptr: the compute stream) has run what is queued.
void reach(CudaStreamHandle stream) {
  CudaEvent reached = CudaEvent::create(0);
  reached.record(stream);
  reached.synchronize();
}

void expect_uploaded(const DeviceBatch& d, const EpochOrder& order, int64_t b, const Dataset& ds) {
  reach(nullptr);
  ASSERT_TRUE(d.images.device().is_cuda());
  ASSERT_TRUE(d.labels.device().is_cuda());
  ASSERT_EQ(d.index, b);
  const int64_t per = shape_numel(ds.sample_shape());
  for (int j = 0; j < kBatch; ++j) {
    const int64_t i = order.indices[static_cast<size_t>(b * kBatch + j)];
    EXPECT_EQ(d.labels.data<int32_t>()[j], ds.label(i)) << "batch " << b << " row " << j;
    EXPECT_EQ(d.host_labels.i32()[j], ds.label(i)) << "batch " << b << " row " << j;
    for (int64_t k = 0; k < per; ++k)
      ASSERT_EQ(d.images.data<float>()[j * per + k], CountingDataset::value(i, k)) << "batch " << b << " row " << j;
  }
}

struct HoldEvents {  // every event "still running" while alive
  HoldEvents() { vt_emu_hold_events(true); }
  ~HoldEvents() { vt_emu_hold_events(false); }
};

struct Trace {  // records the asynchronous calls while alive
  std::vector<VtEmuAsyncOp> ops;
  Trace() { vt_emu_trace_async(&ops); }
  ~Trace() { vt_emu_trace_async(nullptr); }
};

TEST(BatchUploadEmu, OrderAndContentsAcrossEpochs) {
  auto ds = std::make_shared<CountingDataset>(24, Shape{2, 3, 3});
  Loader loader(ds, ring_config());
  BatchUploader up(loader, Device::cuda(0));
  for (uint64_t epoch : {0, 1}) {
    const EpochOrder order = train_order(ds->size(), 9, epoch, 0, 1);
    up.discard();
    loader.start_epoch(epoch, order);
    DeviceBatch d;
    for (int64_t b = 0; b < 6; ++b) {
      ASSERT_TRUE(up.next(d)) << "epoch " << epoch << " batch " << b;
      expect_uploaded(d, order, b, *ds);
      up.prefetch();
      EXPECT_LE(loader.leased_slots(), Loader::kLeasedSlots);
    }
    EXPECT_FALSE(up.next(d));
  }
}

TEST(BatchUploadEmu, StreamsOrderedByEvents) {
  auto ds = std::make_shared<CountingDataset>(40, Shape{1, 2, 2});
  Loader loader(ds, ring_config());
  BatchUploader up(loader, Device::cuda(0));
  const EpochOrder order = eval_order(ds->size(), 0, 1);
  loader.start_epoch(0, order);
  Trace tr;
  const void* U = up.upload_stream();
  ASSERT_NE(U, nullptr);
  std::vector<const void*> dst;   // batch k's device images
  std::vector<size_t> returned;   // trace length when next() returned batch k
  std::vector<size_t> queued;     // ... when batch k's step had been queued (before prefetch)
  DeviceBatch d;
  for (int k = 0; k < 7; ++k) {
    ASSERT_TRUE(up.next(d));
    expect_uploaded(d, order, k, *ds);
    dst.push_back(d.images.raw());
    returned.push_back(tr.ops.size());
    queued.push_back(tr.ops.size());  // the step's kernels would be queued here
    up.prefetch();
  }
  const auto& ops = tr.ops;
  std::map<const void*, size_t> recorded_at;  // event -> its latest Record before a given point
  for (const VtEmuAsyncOp& op : ops)
    if (op.kind == VtEmuAsyncOp::Copy) EXPECT_EQ(op.stream, U) << "a batch copy on another stream than the upload stream";
  for (size_t k = 0; k < dst.size(); ++k) {
    // The last copy into batch k's images before next() returned it.
    size_t c = SIZE_MAX;
    for (size_t i = 0; i < returned[k]; ++i)
      if (ops[i].kind == VtEmuAsyncOp::Copy && ops[i].dst == dst[k]) c = i;
    ASSERT_NE(c, SIZE_MAX) << "batch " << k << " was never copied";
    // Its event is recorded on the upload stream after the copies, and the
    // compute stream waits for it before the step.
    size_t r = SIZE_MAX, w = SIZE_MAX;
    for (size_t i = c + 1; i < returned[k] && r == SIZE_MAX; ++i)
      if (ops[i].kind == VtEmuAsyncOp::Record && ops[i].stream == U) r = i;
    ASSERT_NE(r, SIZE_MAX) << "batch " << k << ": no event recorded after its copy";
    for (size_t i = r + 1; i < returned[k]; ++i)
      if (ops[i].kind == VtEmuAsyncOp::Wait && ops[i].stream == nullptr && ops[i].event == ops[r].event) w = i;
    EXPECT_NE(w, SIZE_MAX) << "batch " << k << ": the compute stream does not wait for its copy";
    // Slots alternate; the copy into a slot used before waits for an event
    // the compute stream recorded after the previous user's step was queued.
    if (k >= 2) {
      EXPECT_EQ(dst[k], dst[k - 2]) << "batch " << k;
      EXPECT_NE(dst[k], dst[k - 1]) << "batch " << k;
      bool ordered = false;
      for (size_t v = queued[k - 2]; v < c && !ordered; ++v) {
        if (ops[v].kind != VtEmuAsyncOp::Wait || ops[v].stream != U) continue;
        for (size_t q = queued[k - 2]; q < v && !ordered; ++q)
          ordered = ops[q].kind == VtEmuAsyncOp::Record && ops[q].stream == nullptr && ops[q].event == ops[v].event;
      }
      EXPECT_TRUE(ordered) << "batch " << k << " overwrites the slot of batch " << k - 2
                           << " without waiting for its step";
    }
  }
}

TEST(BatchUploadEmu, HostSlotGivenBackOnlyAfterItsCopy) {
  auto ds = std::make_shared<CountingDataset>(40, Shape{1, 2, 2});
  Loader loader(ds, ring_config());
  BatchUploader up(loader, Device::cuda(0));
  const EpochOrder order = eval_order(ds->size(), 0, 1);
  loader.start_epoch(0, order);
  DeviceBatch d;
  {
    HoldEvents hold;  // the copies are "still running"
    ASSERT_TRUE(up.next(d));
    EXPECT_EQ(up.host_batches_held(), 1);
    EXPECT_EQ(loader.leased_slots(), 1);
    up.prefetch();
    up.prefetch();  // one batch ahead at most
    EXPECT_EQ(up.host_batches_held(), 2);
    EXPECT_EQ(loader.leased_slots(), 2);
    ASSERT_TRUE(up.next(d));
    expect_uploaded(d, order, 1, *ds);
    EXPECT_EQ(loader.leased_slots(), 2);  // batch 0's copy has not completed
    // Batch 2 refills batch 0's device slot: batch 0's copy is waited for
    // (cudaEventSynchronize), then its host slot goes back.
    up.prefetch();
    EXPECT_EQ(up.host_batches_held(), 2);
    EXPECT_EQ(loader.leased_slots(), 2);
  }
  // The copies completed: the next call gives both host slots back.
  reach(up.upload_stream());
  ASSERT_TRUE(up.next(d));
  expect_uploaded(d, order, 2, *ds);
  EXPECT_EQ(up.host_batches_held(), 0);
  EXPECT_EQ(loader.leased_slots(), 0);
}

TEST(BatchUploadEmu, LoaderErrorArrivesAtItsBatch) {
  // Sample 9 sits in batch 2: prefetch() keeps the error, next() throws it.
  auto ds = std::make_shared<CountingDataset>(24, Shape{1, 2, 2}, 3, /*throw_at=*/9);
  Loader loader(ds, ring_config());
  BatchUploader up(loader, Device::cuda(0));
  const EpochOrder order = eval_order(ds->size(), 0, 1);
  loader.start_epoch(0, order);
  DeviceBatch d;
  for (int b = 0; b < 2; ++b) {
    ASSERT_TRUE(up.next(d));
    expect_uploaded(d, order, b, *ds);
    EXPECT_NO_THROW(up.prefetch());
  }
  try {
    up.next(d);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("sample 9"), std::string::npos) << e.what();
  }
}

TEST(BatchUploadEmu, PrepareRunsOnTheHostBatchBeforeItsCopy) {
  auto ds = std::make_shared<CountingDataset>(16, Shape{1, 2, 2});
  Loader loader(ds, ring_config());
  BatchUploader up(loader, Device::cuda(0), [](Batch& b) {
    b.targets = Tensor::full({b.images.size(0), 2}, static_cast<float>(b.index) + 0.5f);
    b.images.f32()[0] = -1;
  });
  loader.start_epoch(0, eval_order(ds->size(), 0, 1));
  DeviceBatch d;
  for (int b = 0; b < 4; ++b) {
    ASSERT_TRUE(up.next(d));
    ASSERT_TRUE(d.targets.defined());
    ASSERT_EQ(d.targets.shape(), (Shape{kBatch, 2}));
    reach(nullptr);
    for (int i = 0; i < 2 * kBatch; ++i) EXPECT_EQ(d.targets.data<float>()[i], b + 0.5f);
    EXPECT_EQ(d.images.data<float>()[0], -1.0f);
    EXPECT_EQ(d.images.data<float>()[1], CountingDataset::value(b * kBatch, 1));
    up.prefetch();
  }
}

TEST(BatchUploadEmu, DestroyedWithACopyInFlight) {
  auto ds = std::make_shared<CountingDataset>(40, Shape{1, 2, 2});
  Loader loader(ds, ring_config());
  const EpochOrder order = eval_order(ds->size(), 0, 1);
  loader.start_epoch(0, order);
  {
    HoldEvents hold;
    BatchUploader up(loader, Device::cuda(0));
    DeviceBatch d;
    ASSERT_TRUE(up.next(d));
    up.prefetch();
    EXPECT_EQ(loader.leased_slots(), 2);
  }  // waits for the upload stream, then gives the host slots back
  EXPECT_EQ(loader.leased_slots(), 0);
  Batch b;  // the loader goes on from where the uploader left it
  ASSERT_TRUE(loader.next(b));
  EXPECT_EQ(b.index, 2);
}

TEST(BatchUploadEmu, NoCudaMallocAfterTheFirstStep) {
  auto ds = std::make_shared<CountingDataset>(48, Shape{3, 4, 4});
  Loader loader(ds, ring_config());
  BatchUploader up(loader, Device::cuda(0));
  loader.start_epoch(0, eval_order(ds->size(), 0, 1));
  DeviceBatch d;
  ASSERT_TRUE(up.next(d));
  up.prefetch();  // the second device slot
  const size_t before = vt_emu_malloc_count();
  for (int b = 1; b < 12; ++b) {
    ASSERT_TRUE(up.next(d));
    up.prefetch();
  }
  EXPECT_EQ(vt_emu_malloc_count(), before);
}

}  // namespace
}  // namespace vt
