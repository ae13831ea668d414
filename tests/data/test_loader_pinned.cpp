// The loader's pinned batch slots (LoaderConfig::pinned_slots): the same
// batches as per-batch tensors, a slot refilled only once every tensor
// viewing it is gone, leases outliving the loader, errors delivered at
// their batch. (Without a GPU the slots are plain host memory; the slot
// logic is the same.)
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <thread>

#include "data/counting_dataset.h"
#include "data_pipeline/loader.h"

namespace vt {
namespace {

using vt_test::CountingDataset;

LoaderConfig pinned_config(int batch, int workers, int prefetch) {
  LoaderConfig c;
  c.batch_size = batch;
  c.workers = workers;
  c.prefetch = prefetch;
  c.seed = 5;
  c.pinned_slots = true;
  return c;
}

// Batch b of an identity order holds samples b * B .. b * B + B - 1.
void expect_batch(const Batch& got, int64_t b, int B, const Dataset& ds) {
  const int64_t per = shape_numel(ds.sample_shape());
  ASSERT_EQ(got.images.size(0), B);
  for (int j = 0; j < B; ++j) {
    const int64_t i = b * B + j;
    EXPECT_EQ(got.labels.i32()[j], ds.label(i)) << "batch " << b << " row " << j;
    for (int64_t k = 0; k < per; k += 7)
      ASSERT_EQ(got.images.f32()[j * per + k], CountingDataset::value(i, k)) << "batch " << b << " row " << j;
  }
}

TEST(LoaderPinned, SameBatchesAsPerBatchTensors) {
  // An image dataset with loader-side Mixup (targets in the slot too), over
  // two epochs, holding at most the two batches a consumer may lease.
  auto ds = std::make_shared<CountingDataset>(40, Shape{3, 4, 4}, 5);
  LoaderConfig plain = pinned_config(4, 3, 2);
  plain.pinned_slots = false;
  plain.mixup = MixupParams{};
  LoaderConfig pinned = plain;
  pinned.pinned_slots = true;
  Loader a(ds, plain), p(ds, pinned);
  EXPECT_EQ(p.num_slots(), 3 + Loader::kLeasedSlots);
  for (uint64_t epoch : {0, 1}) {
    a.start_epoch(epoch, train_order(ds->size(), 5, epoch, 0, 1));
    p.start_epoch(epoch, train_order(ds->size(), 5, epoch, 0, 1));
    Batch x, prev, y;
    int n = 0;
    while (a.next(x)) {
      prev = std::move(y);  // the previous batch stays leased while this one is read
      ASSERT_TRUE(p.next(y));
      EXPECT_EQ(y.index, x.index);
      ASSERT_EQ(y.images.shape(), x.images.shape());
      EXPECT_EQ(std::memcmp(y.images.raw(), x.images.raw(), x.images.nbytes()), 0) << "epoch " << epoch << " batch " << n;
      EXPECT_EQ(std::memcmp(y.labels.raw(), x.labels.raw(), x.labels.nbytes()), 0);
      ASSERT_TRUE(y.targets.defined());
      EXPECT_EQ(std::memcmp(y.targets.raw(), x.targets.raw(), x.targets.nbytes()), 0);
      EXPECT_EQ(y.mix.applied, x.mix.applied);
      EXPECT_LE(p.leased_slots(), 2);
      ++n;
    }
    EXPECT_EQ(n, 10);
    EXPECT_FALSE(p.next(y));
  }
}

TEST(LoaderPinned, SlotRefilledOnlyAfterEveryViewIsGone) {
  // 1 worker, prefetch 1: 3 slots. Batch 3 goes where batch 0 was.
  auto ds = std::make_shared<CountingDataset>(24, Shape{2, 3, 3});
  Loader l(ds, pinned_config(2, 1, 1));
  ASSERT_EQ(l.num_slots(), 3);
  l.start_epoch(0, eval_order(ds->size(), 0, 1));
  Batch b0;
  ASSERT_TRUE(l.next(b0));
  // A view of the images keeps the slot leased after the batch is gone.
  Tensor view = b0.images.slice(0, 1, 2);
  void* const slot0 = b0.images.raw();
  b0 = Batch{};
  EXPECT_EQ(l.leased_slots(), 1);
  auto later = std::async(std::launch::async, [&l, ds] {
    Batch b;
    for (int k = 1; k <= 3; ++k) {
      if (!l.next(b)) return Batch{};
      if (k < 3) expect_batch(b, k, 2, *ds);
    }
    return b;
  });
  // Batches 1 and 2 take the other slots; batch 3 waits for slot 0.
  EXPECT_EQ(later.wait_for(std::chrono::milliseconds(300)), std::future_status::timeout);
  // Slot 0 was not written meanwhile: the view still reads sample 1.
  EXPECT_EQ(view.f32()[0], CountingDataset::value(1, 0));
  EXPECT_EQ(view.f32()[17], CountingDataset::value(1, 17));
  view = Tensor();  // the last view goes: slot 0 is given back
  ASSERT_EQ(later.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const Batch b3 = later.get();
  EXPECT_EQ(b3.images.raw(), slot0);  // refilled in place
  expect_batch(b3, 3, 2, *ds);
}

TEST(LoaderPinned, NextEpochContinuesAroundTheRing) {
  // A consumer holding the last two batches of an epoch still gets the next
  // epoch's first batches (they take other slots).
  auto ds = std::make_shared<CountingDataset>(8, Shape{1, 2, 2});
  Loader l(ds, pinned_config(2, 1, 1));
  Batch held[2], b;
  l.start_epoch(0, eval_order(ds->size(), 0, 1));
  for (int k = 0; k < 4; ++k) ASSERT_TRUE(l.next(held[k % 2]));
  EXPECT_FALSE(l.next(b));
  EXPECT_EQ(l.leased_slots(), 2);
  l.start_epoch(1, eval_order(ds->size(), 0, 1));
  auto first = std::async(std::launch::async, [&l] {
    Batch x;
    return l.next(x) ? x : Batch{};
  });
  ASSERT_EQ(first.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const Batch x = first.get();
  expect_batch(x, 0, 2, *ds);
  expect_batch(held[1], 3, 2, *ds);  // untouched
}

TEST(LoaderPinned, LeaseOutlivesTheLoader) {
  auto ds = std::make_shared<CountingDataset>(12, Shape{1, 4, 4});
  Batch kept;
  {
    Loader l(ds, pinned_config(3, 2, 2));
    l.start_epoch(0, eval_order(ds->size(), 0, 1));
    ASSERT_TRUE(l.next(kept));
    Batch b;
    ASSERT_TRUE(l.next(b));
    // Destroyed with workers busy (the ring holds ready batches) and a lease out.
  }
  expect_batch(kept, 0, 3, *ds);  // the slot memory lives as long as the lease
}

TEST(LoaderPinned, DestroyedWhileAWorkerWaitsForALeasedSlot) {
  auto ds = std::make_shared<CountingDataset>(40, Shape{1, 2, 2});
  Batch a, b;
  {
    Loader l(ds, pinned_config(2, 1, 1));  // 3 slots
    l.start_epoch(0, eval_order(ds->size(), 0, 1));
    ASSERT_TRUE(l.next(a));
    ASSERT_TRUE(l.next(b));
    // The worker fills slot 2, then waits for slot 0 (leased by `a`).
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }  // must not hang
  expect_batch(a, 0, 2, *ds);
  expect_batch(b, 1, 2, *ds);
}

TEST(LoaderPinned, WorkerErrorArrivesAtItsBatch) {
  auto ds = std::make_shared<CountingDataset>(12, Shape{1, 2, 2}, 3, /*throw_at=*/7);
  Loader l(ds, pinned_config(2, 2, 2));
  l.start_epoch(0, eval_order(ds->size(), 0, 1));
  Batch b;
  for (int k = 0; k < 3; ++k) {
    ASSERT_TRUE(l.next(b));
    expect_batch(b, k, 2, *ds);
  }
  try {
    l.next(b);  // batch 3 holds sample 7
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("sample 7"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(l.next(b));  // the epoch is over
}

}  // namespace
}  // namespace vt
