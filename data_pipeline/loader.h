// Threaded batch loader: N worker threads decode and augment whole batches
// into a bounded ring of ready batches; the consumer takes them in order.
//
// Determinism: sample randomness comes from Philox(seed, (epoch, draw id))
// and Mixup/CutMix from Philox(seed, (rank, epoch, batch index)), never from
// the worker that ran them, so batches are bitwise identical for any number
// of workers.
//
// Corrupt files (CorruptImage from the dataset): on_corrupt = Error stops the
// epoch and rethrows in the consumer, naming the file; Skip replaces the
// sample by the next decodable one in dataset order (index + 1, + 2, ...,
// with that sample's own label, so labels never shift), counts the event and
// remembers the file name (a warning through vt::log, once per file per
// process; corrupt_count/corrupt_names give the totals). Any other exception in a
// worker is delivered to the consumer at that batch. Destroying the loader or
// starting a new epoch mid-epoch stops the workers cleanly.
//
// Batch memory: by default every batch is a fresh CPU tensor. With
// `pinned_slots` (GPU runs, data_pipeline/batch_upload.h) the workers write
// into a ring of preallocated slots of pinned host memory (core/pinned_memory.h),
// so the upload can be an asynchronous copy and the steady state allocates
// nothing. A batch handed out by next() then leases its slot: the slot is
// refilled only once every tensor viewing it (images, labels, targets and
// any view or copy of them) is gone, so the consumer decides when a slot
// may be reused (the uploader keeps the batch until its copy completed).
// The ring has max(prefetch, workers) + kLeasedSlots slots, so a consumer
// may hold up to kLeasedSlots batches without starving the workers; holding
// more makes next() wait for a slot that is never given back. A lease may
// outlive the loader (the slot memory is freed with the last lease).
#pragma once
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/tensor.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/mixup.h"
#include "data_pipeline/sampler.h"

namespace vt {

enum class OnCorrupt { Error, Skip };
OnCorrupt parse_on_corrupt(const std::string& s);  // "error" | "skip", else throws naming data.on_corrupt

struct LoaderConfig {
  int batch_size = 64;
  int workers = 2;
  int prefetch = 4;      // ring capacity in batches (at least `workers` is used)
  bool drop_last = true; // training: true; evaluation: false (forced true with mixup)
  uint64_t seed = 0;
  int rank = 0;          // only keys the Mixup stream
  OnCorrupt on_corrupt = OnCorrupt::Error;
  std::optional<MixupParams> mixup;  // num_classes is taken from the dataset
  bool pinned_slots = false;         // batches in leased pinned slots (above)
  // data.augment_on=device: the dataset stops before the augmentation
  // (Dataset::load_planned): images are the uint8 crops, plans their
  // augmentation, applied by the consumer (augment_batch_args + kernels/augment.h augment_apply). Needs a dataset
  // with has_augment_plans() and no loader-side mixup (it would mix crops).
  bool augment_plans = false;
  // data.decode_on=device (needs augment_plans): the dataset stops before
  // decoding (Dataset::load_encoded): a JPEG sample comes as its bytes and
  // crop box in Batch::encoded, decoded and cropped by the consumer
  // (data_pipeline/device/device_batch_decode.h) into the crops' place;
  // other formats come as host crops in `images` as with augment_plans.
  bool encoded = false;
  // encoded: whether the consumer decodes a JPEG on the device (e.g.
  // DeviceBatchDecoder::worker_filter; called on the workers, so it must be
  // thread-safe). A JPEG it declines is decoded at full size and cropped to
  // its box by the worker (what the consumer's host fallback would do on
  // its own thread, and the host path with data.dct_scaling off) and comes
  // as a host crop. Empty: every JPEG is handed on.
  std::function<bool(const uint8_t* data, size_t size)> device_decodes;
};

struct Batch {
  int64_t index = 0;   // batch index within the epoch (the order given to start_epoch)
  Tensor images;       // F32 [B, C, H, W] (augment_plans: U8 [B, H, W, C]); with pinned_slots these three lease the batch's slot
  Tensor labels;       // I32 [B]
  Tensor targets;      // F32 [B, K] soft targets when mixup is on, else undefined
  MixupDecision mix;
  std::vector<int64_t> indices;  // dataset indices actually used (after skips)
  std::vector<AugmentPlan> plans;  // augment_plans: one per image, else empty
  // encoded: one per image; encoded[i].data null means images[i] holds the
  // host-made crop, else images[i] is left for the consumer to fill.
  std::vector<EncodedSample> encoded;
};

class Loader {
 public:
  static constexpr int kLeasedSlots = 2;  // pinned_slots: batches a consumer may hold
  // Starts cfg.workers threads. When the OS refuses a thread, the ones
  // already started are stopped and joined and std::runtime_error naming
  // data.workers is thrown (never std::terminate).
  Loader(std::shared_ptr<const Dataset> dataset, LoaderConfig cfg);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Starts producing the batches of `order` (abandoning any epoch in flight).
  void start_epoch(uint64_t epoch, EpochOrder order);
  // Next batch in order; false when the epoch is exhausted. Rethrows a
  // worker's exception (the epoch is then over).
  bool next(Batch& out);
  int64_t num_batches() const { return num_batches_; }

  // encoded: sample i of `batch` (a batch of this epoch, not yet handed to
  // the next epoch) that the consumer could not decode, `error` the
  // decoder's CorruptImage naming the file. data.on_corrupt=error rethrows
  // it; skip counts and warns as a worker does and replaces the sample as a
  // worker does (the next decodable sample in dataset order, with this
  // sample's draws) through the host path (Dataset::load_planned): its crop
  // goes to batch.images[i] (encoded[i].data becomes null), its label,
  // index and plan to the batch. Thread-safe with the workers.
  void replace_undecodable(Batch& batch, int i, std::exception_ptr error);

  int64_t corrupt_count() const;
  std::vector<std::string> corrupt_names() const;  // sorted, unique
  // pinned_slots: the slots of the ring, and how many are leased now.
  int num_slots() const { return static_cast<int>(slots_.size()); }
  int leased_slots() const;

 private:
  struct Slot {
    bool ready = false;
    Batch batch;
    std::exception_ptr error;
  };
  void worker_loop();
  void build(int64_t b, int64_t slot, uint64_t epoch, uint64_t generation, Slot& out);
  // Slot of batch b of this epoch (mu_ held): batches of successive epochs
  // continue around the ring.
  int64_t slot_of(int64_t b) const { return (slot_base_ + b) % capacity_; }
  // Where a sample goes: its floats (dst), or (augment_plans) its crop (u8)
  // and plan, or (encoded) also its bytes and box (enc).
  struct SampleOut {
    float* dst = nullptr;
    uint8_t* u8 = nullptr;
    AugmentPlan* plan = nullptr;
    EncodedSample* enc = nullptr;
    int32_t* label = nullptr;
    int64_t* used = nullptr;
  };
  // Loads the sample at `pos` of the order, starting from dataset index
  // `idx` (the order's, or the one after an undecodable one), skipping
  // corrupt files per on_corrupt.
  void load_sample(int64_t pos, int64_t idx, int64_t attempts_done, uint64_t epoch, const SampleOut& out);
  void crop_on_host(EncodedSample* enc, uint8_t* hwc) const;  // LoaderConfig::device_decodes declined it
  // Counts a corrupt file and warns once per file per process.
  void note_corrupt(int64_t idx, const std::exception& e);
  void stop_epoch(std::unique_lock<std::mutex>& lk);
  void stop_workers();
  struct PinnedRing;

  std::shared_ptr<const Dataset> ds_;
  LoaderConfig cfg_;
  int capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_work_, cv_ready_;
  std::vector<std::thread> threads_;
  bool stop_ = false;
  uint64_t generation_ = 0;
  uint64_t epoch_ = 0;
  EpochOrder order_;
  int64_t num_batches_ = 0, next_claim_ = 0, next_take_ = 0, slot_base_ = 0;
  int in_flight_ = 0;
  bool failed_ = false;
  std::vector<Slot> slots_;
  std::shared_ptr<PinnedRing> ring_;  // pinned_slots: slot memory and leases, shared with the leases
  int64_t corrupt_count_ = 0;
  std::set<std::string> corrupt_names_;
};

}  // namespace vt
