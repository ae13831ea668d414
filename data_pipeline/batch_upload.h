// The input upload of GPU training, shared by vtrain and dittrain: the
// loader's workers fill pinned host slots (data_pipeline/loader.h,
// pinned_slots), and each batch is copied to the GPU on an upload stream of
// its own while the previous step still runs on the compute stream (the op
// library's default stream), as PyTorch's DataLoader(pin_memory=True)
// with a side-stream prefetcher (timm's PrefetchLoader) does.
//
// Per step, in the step's code:
//   next(batch)  the batch of this step, on the device; the compute stream
//                waits (an event, on the device) for its copy;
//   ...          the step's forward and backward queued on the compute stream;
//   prefetch()   takes the loader's next batch and queues its copy on the
//                upload stream, so the copy runs while the GPU works through
//                this step's queued kernels.
// Without a prefetch (the first step, a new epoch), next() fetches and
// queues the copy itself.
//
// Ordering (all by events, the host never waits in the steady state):
//  - two device slots alternate; the copy into a slot waits for an event the
//    compute stream recorded when the step that last read the slot had been
//    queued (at the following next()), so a copy never overwrites a batch a
//    queued kernel still reads;
//  - the compute stream waits for the copy's event before the step's kernels;
//  - a batch's pinned host slot goes back to the loader (its lease is
//    dropped) only once its copy's event has completed (polled at each call;
//    waited for only when its device slot is refilled), so the workers
//    never overwrite memory a copy still reads. The uploader holds at most
//    two leases, Loader::kLeasedSlots;
//  - the device slots are allocated once, on the compute stream, and declared
//    to the caching allocator as used on the upload stream
//    (cuda_record_stream): a steady-state step allocates nothing.
//
// Encoded batches (data.decode_on=device, LoaderConfig::encoded): the
// `decode` hook fills the device slot's rows of the JPEG samples on the
// upload stream (data_pipeline/device/device_batch_decode.h), so nvJPEG's
// decode and the crops run beside the step on the compute stream (the JPEG
// engines and the copy engine overlap the SMs), ordered as the copies are;
// only the rows of host-made crops are copied; the batch's copy event,
// recorded after both, keeps the host batch, whose bytes the decoder
// reads, until they are done.
//
// The loader's errors (a worker's exception, data.on_corrupt=error) and the
// `prepare` and `decode` hooks' come out of the next() that would have returned that
// batch, never out of prefetch(). The destructor waits for queued copies.
#pragma once
#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>

#include "core/cuda_stream.h"
#include "core/tensor.h"
#include "data_pipeline/loader.h"

namespace vt {

// One batch on the device. images/labels/targets view the uploader's device
// slot: valid until the second next() after the one that returned it, and
// while the uploader lives (they do not own the memory). The step may
// modify them in place (vtrain mixes the images there).
struct DeviceBatch {
  int64_t index = 0;   // the host batch's Batch::index
  Tensor images;       // F32 [B, C, H, W]; U8 [B, H, W, C] crops when the loader has augment_plans
  Tensor labels;       // I32 [B]
  Tensor targets;      // F32 [B, K] when the host batch had targets, else undefined
  Tensor host_labels;  // I32 [B] on the host: a copy of the batch's labels
  MixupDecision mix;   // the host batch's (loader-side Mixup)
  std::vector<int64_t> indices;  // the host batch's Batch::indices (dataset indices used)
  std::vector<AugmentPlan> plans;  // the host batch's Batch::plans (augment_plans: applied on the device)
};

class BatchUploader {
 public:
  // Called on each host batch (in its pinned slot) before its copy is
  // queued: vtrain mixes a multi-rank global batch on the host there.
  using Prepare = std::function<void(Batch&)>;
  // Called on each encoded host batch with the device slot's images (U8
  // [B, H, W, 3]) after `prepare`: fills the rows of encoded samples on the
  // given stream (the upload stream, which by then waits for the slot's
  // last readers); may turn samples into host crops (Loader::replace_undecodable).
  using Decode = std::function<void(Batch&, const Tensor& device_images, CudaStreamHandle stream)>;

  // `loader` must be made with pinned_slots (else the copies are correct but
  // do not overlap) and outlive the uploader's calls; `device` a CUDA device.
  // A loader of encoded batches needs `decode`.
  BatchUploader(Loader& loader, Device device, Prepare prepare = {}, Decode decode = {});
  ~BatchUploader();
  BatchUploader(const BatchUploader&) = delete;
  BatchUploader& operator=(const BatchUploader&) = delete;

  // This step's batch (above); false when the loader's epoch is exhausted.
  // Rethrows the loader's or prepare's exception for this batch.
  bool next(DeviceBatch& out);
  // Queues the copy of the loader's next batch (no-op when one is queued
  // already; at the end of the epoch nothing is queued). Call once the
  // step's work is queued; blocks only while the loader has no batch ready.
  void prefetch();
  // Drops a prefetched batch (e.g. the loader's epoch is restarted).
  void discard();

  // Host batches whose leases the uploader still holds (tests).
  int host_batches_held() const;
  CudaStreamHandle upload_stream() const { return stream_.handle(); }

 private:
  struct Slot {  // one device batch and the host batch copied into it
    Tensor images, labels, targets;  // owned device buffers (the largest batch seen)
    CudaEvent copied;    // upload stream: the copy into this slot
    CudaEvent released;  // compute stream: every step reading this slot is queued
    Batch host;          // the pinned host batch until `copied` completed
  };
  struct Staged {
    bool has = false;
    std::exception_ptr error;
    int slot = 0;
    DeviceBatch batch;
  };
  void stage();                    // fetches and queues one batch into staged_
  void release_completed();        // drops the host batches whose copies completed
  Tensor device_view(Tensor& buffer, const Tensor& host);

  Loader& loader_;
  Device device_;
  Prepare prepare_;
  Decode decode_;
  CudaStream stream_;  // declared first: destroyed after the slots' frees and events
  std::array<Slot, 2> slots_;
  CudaEvent allocated_;  // compute stream: the work queued before a slot buffer was (re)allocated
  int next_slot_ = 0;
  int current_slot_ = -1;  // the slot of the batch next() returned last
  std::optional<Staged> staged_;
};

}  // namespace vt
