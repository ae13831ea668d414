#include "data_pipeline/loader.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <stdexcept>
#include <system_error>

#include "core/log.h"
#include "core/pinned_memory.h"
#include "data_pipeline/crop_decode.h"
#include "data_pipeline/decode.h"

namespace vt {

namespace {

bool first_warning_in_process(const std::string& name) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lk(mu);
  return warned.insert(name).second;
}

size_t align64(size_t n) { return (n + 63) / 64 * 64; }

}  // namespace

// pinned_slots: one pinned buffer per slot (images, then labels, then the
// Mixup targets) and the slots' lease flags. Shared by the loader and every
// lease, so a lease may outlive the loader; the memory goes with the last.
struct Loader::PinnedRing {
  std::vector<PinnedBuffer> mem;
  size_t labels_at = 0, targets_at = 0;         // byte offsets inside a slot
  std::unique_ptr<std::atomic<bool>[]> leased;  // read by the workers' predicate without `mu`
  std::mutex mu;                                // guards `loader`
  Loader* loader = nullptr;                     // null once the loader is gone

  char* base(int64_t slot) const { return static_cast<char*>(mem[static_cast<size_t>(slot)].data()); }
  // A slot is given back: wake the workers waiting for it. Lock order
  // PinnedRing::mu -> Loader::mu_ (the loader never takes `mu` holding mu_).
  void release(int64_t slot) {
    leased[slot].store(false);
    std::lock_guard<std::mutex> g(mu);
    if (!loader) return;
    std::lock_guard<std::mutex> lk(loader->mu_);
    loader->cv_work_.notify_all();
  }
};

namespace {

// Held (shared) by the tensors of a handed-out batch; gives the slot back
// when the last of them goes.
struct SlotLease {
  std::shared_ptr<void> ring;
  std::function<void()> give_back;
  ~SlotLease() { give_back(); }
};

}  // namespace

OnCorrupt parse_on_corrupt(const std::string& s) {
  if (s == "error") return OnCorrupt::Error;
  if (s == "skip") return OnCorrupt::Skip;
  throw std::invalid_argument("data.on_corrupt: expected 'error' or 'skip', got '" + s + "'");
}

Loader::Loader(std::shared_ptr<const Dataset> dataset, LoaderConfig cfg) : ds_(std::move(dataset)), cfg_(cfg) {
  if (!ds_) throw std::invalid_argument("Loader: dataset is null");
  if (cfg_.batch_size <= 0) throw std::invalid_argument("Loader: batch_size must be positive");
  if (cfg_.workers < 1) throw std::invalid_argument("Loader: workers must be >= 1");
  if (cfg_.mixup) {
    cfg_.mixup->num_classes = ds_->num_classes();
    cfg_.drop_last = true;  // a ragged batch cannot be mixed with its mirror
    if (cfg_.batch_size % 2 != 0)
      throw std::invalid_argument("Loader: mixup/cutmix needs an even batch size, got " +
                                  std::to_string(cfg_.batch_size));
  }
  if (cfg_.augment_plans) {
    if (!ds_->has_augment_plans())
      throw std::invalid_argument("Loader: augment_plans needs a dataset with augmentation plans (the DeiT train pipeline)");
    if (cfg_.mixup)
      throw std::invalid_argument("Loader: augment_plans with loader-side mixup would mix unaugmented crops");
    if (ds_->sample_shape().size() != 3 || ds_->sample_shape()[0] != 3)
      throw std::invalid_argument("Loader: augment_plans needs [3, H, W] samples, got " + shape_str(ds_->sample_shape()));
  }
  if (cfg_.encoded && !cfg_.augment_plans)
    throw std::invalid_argument("Loader: encoded samples (data.decode_on=device) need augment_plans");
  capacity_ = std::max(cfg_.prefetch, cfg_.workers);
  if (cfg_.pinned_slots) {
    // The consumer's leased batches take slots beyond the prefetch window.
    capacity_ += kLeasedSlots;
    const Shape shape = ds_->sample_shape();
    const size_t B = static_cast<size_t>(cfg_.batch_size);
    const size_t K = cfg_.mixup ? static_cast<size_t>(cfg_.mixup->num_classes) : 0;
    ring_ = std::make_shared<PinnedRing>();
    // augment_plans: uint8 crops, a quarter of the floats' bytes.
    const size_t value_bytes = cfg_.augment_plans ? sizeof(uint8_t) : sizeof(float);
    ring_->labels_at = align64(B * static_cast<size_t>(shape_numel(shape)) * value_bytes);
    ring_->targets_at = ring_->labels_at + align64(B * sizeof(int32_t));
    const size_t bytes = ring_->targets_at + B * K * sizeof(float);
    ring_->leased.reset(new std::atomic<bool>[static_cast<size_t>(capacity_)]);
    for (int i = 0; i < capacity_; ++i) {
      ring_->mem.emplace_back(bytes);
      ring_->leased[i].store(false);
    }
    ring_->loader = this;
  }
  slots_.resize(static_cast<size_t>(capacity_));
  try {
    threads_.reserve(static_cast<size_t>(cfg_.workers));
    for (int i = 0; i < cfg_.workers; ++i) threads_.emplace_back([this] { worker_loop(); });
  } catch (const std::exception& e) {  // std::system_error, or std::bad_alloc for the thread state
    // A throwing constructor runs no destructor: the workers already started
    // must be stopped and joined here, or ~thread calls std::terminate.
    const size_t started = threads_.size();
    stop_workers();
    throw std::runtime_error("data.workers = " + std::to_string(cfg_.workers) + ": could not start loader thread " +
                             std::to_string(started + 1) + " (" + e.what() + "); lower data.workers");
  }
}

Loader::~Loader() {
  if (ring_) {  // leases still out no longer wake this loader
    std::lock_guard<std::mutex> g(ring_->mu);
    ring_->loader = nullptr;
  }
  stop_workers();
}

int Loader::leased_slots() const {
  int n = 0;
  if (ring_)
    for (int i = 0; i < capacity_; ++i) n += ring_->leased[i].load() ? 1 : 0;
  return n;
}

void Loader::stop_workers() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
    ++generation_;
  }
  cv_work_.notify_all();
  cv_ready_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void Loader::stop_epoch(std::unique_lock<std::mutex>& lk) {
  ++generation_;
  // The next epoch's batch 0 takes the slot after the last batch taken, so
  // the batches a consumer still leases never sit where it waits for one.
  slot_base_ = (slot_base_ + next_take_) % capacity_;
  num_batches_ = 0;
  next_claim_ = next_take_ = 0;
  cv_work_.notify_all();
  // Workers still building a batch of the old epoch finish (they check the
  // generation per sample) before the slots are reused.
  cv_ready_.wait(lk, [this] { return in_flight_ == 0; });
  for (auto& s : slots_) s = Slot{};
}

void Loader::start_epoch(uint64_t epoch, EpochOrder order) {
  if (order.draw_ids.size() != order.indices.size())
    throw std::invalid_argument("Loader::start_epoch: order has " + std::to_string(order.indices.size()) +
                                " indices but " + std::to_string(order.draw_ids.size()) + " draw ids");
  for (int64_t i : order.indices)
    if (i < 0 || i >= ds_->size())
      throw std::invalid_argument("Loader::start_epoch: index " + std::to_string(i) + " outside dataset of " +
                                  std::to_string(ds_->size()));
  std::unique_lock<std::mutex> lk(mu_);
  stop_epoch(lk);
  epoch_ = epoch;
  order_ = std::move(order);
  const int64_t n = static_cast<int64_t>(order_.size()), B = cfg_.batch_size;
  num_batches_ = cfg_.drop_last ? n / B : (n + B - 1) / B;
  failed_ = false;
  cv_work_.notify_all();
}

bool Loader::next(Batch& out) {
  // The previous batch goes first: giving its slot back takes mu_.
  out = Batch{};
  std::unique_lock<std::mutex> lk(mu_);
  if (failed_ || next_take_ >= num_batches_) return false;
  Slot& s = slots_[static_cast<size_t>(slot_of(next_take_))];
  cv_ready_.wait(lk, [&] { return s.ready || stop_; });
  if (!s.ready) return false;
  std::exception_ptr err = s.error;
  out = std::move(s.batch);
  s = Slot{};
  const int64_t slot = slot_of(next_take_);
  ++next_take_;
  if (err) {
    failed_ = true;
    stop_epoch(lk);
    std::rethrow_exception(err);
  }
  if (ring_) {
    // The batch's tensors now lease the slot: it is refilled only after
    // the last of them (or any view of them) is gone.
    ring_->leased[slot].store(true);
    auto lease = std::make_shared<SlotLease>();
    lease->ring = ring_;
    lease->give_back = [ring = ring_.get(), slot] { ring->release(slot); };
    for (Tensor* t : {&out.images, &out.labels, &out.targets})
      if (t->defined()) *t = Tensor::wrap(t->raw(), t->shape(), t->dtype(), Device::cpu(), lease);
  }
  cv_work_.notify_all();
  return true;
}

void Loader::worker_loop() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_work_.wait(lk, [this] {
      return stop_ || (next_claim_ < num_batches_ && next_claim_ < next_take_ + capacity_ &&
                       !(ring_ && ring_->leased[slot_of(next_claim_)].load()));
    });
    if (stop_) return;
    const int64_t b = next_claim_++;
    const uint64_t gen = generation_, epoch = epoch_;
    const int64_t slot = slot_of(b);
    ++in_flight_;
    lk.unlock();
    Slot result;
    try {
      build(b, slot, epoch, gen, result);
    } catch (...) {
      result.error = std::current_exception();
    }
    lk.lock();
    --in_flight_;
    if (gen == generation_) {
      Slot& s = slots_[static_cast<size_t>(slot)];
      s = std::move(result);
      s.ready = true;
    }
    cv_ready_.notify_all();
  }
}

void Loader::note_corrupt(int64_t idx, const std::exception& e) {
  const std::string name = ds_->name(idx);
  bool first = false;
  {
    std::lock_guard<std::mutex> g(mu_);
    ++corrupt_count_;
    first = corrupt_names_.insert(name).second;
  }
  // Through vt::log so the warning reaches the run's log.txt; once per
  // file per process (an evaluation loader would otherwise repeat the
  // training loader's warnings every epoch).
  if (first && first_warning_in_process(name))
    vt::log().warn("data: skipping corrupt file ({}); replaced by the next valid sample", e.what());
}

// A JPEG the consumer would decode on its host fallback (LoaderConfig::
// device_decodes): decoded here at full size and cropped to the box
// load_encoded drew, with the host path's resize (data.dct_scaling off:
// the device path's reference), into the host crop's place.
void Loader::crop_on_host(EncodedSample* enc, uint8_t* hwc) const {
  const int S = static_cast<int>(ds_->sample_shape()[1]);
  const DecodedImage d = decode_image(enc->data, enc->size, enc->name);  // CorruptImage naming the file
  const cv::Mat img =
      resize_scaled_box(d.rgb, 0, 0, d.full_width, d.full_height, d.rgb.cols, d.rgb.rows, enc->box, S);
  cv::Mat dst(S, S, CV_8UC3, hwc);
  img.copyTo(dst);  // keeps dst's buffer: same size and type
  *enc = EncodedSample{};
}

void Loader::load_sample(int64_t pos, int64_t idx, int64_t attempts_done, uint64_t epoch, const SampleOut& out) {
  const int64_t N = ds_->size();
  const uint64_t stream = philox_stream(kPurposeAugment, epoch, static_cast<uint64_t>(order_.draw_ids[static_cast<size_t>(pos)]));
  for (int64_t attempt = attempts_done;; ++attempt) {
    Philox rng(cfg_.seed, stream);
    try {
      if (out.enc) {
        ds_->load_encoded(idx, rng, out.enc, out.u8, out.plan);
        if (out.enc->data && cfg_.device_decodes && !cfg_.device_decodes(out.enc->data, out.enc->size))
          crop_on_host(out.enc, out.u8);
      } else if (out.u8) ds_->load_planned(idx, rng, out.u8, out.plan);
      else ds_->load(idx, rng, out.dst);
      *out.label = ds_->label(idx);
      *out.used = idx;
      return;
    } catch (const CorruptImage& e) {
      if (cfg_.on_corrupt == OnCorrupt::Error) throw with_skip_hint(e);
      note_corrupt(idx, e);
      if (attempt + 1 >= N) throw std::runtime_error("data: every sample tried is corrupt (last: " + ds_->name(idx) + ")");
      idx = (idx + 1) % N;
    }
  }
}

void Loader::replace_undecodable(Batch& batch, int i, std::exception_ptr error) {
  if (!cfg_.encoded || i < 0 || static_cast<size_t>(i) >= batch.encoded.size())
    throw std::logic_error("Loader::replace_undecodable: sample " + std::to_string(i) + " of a batch that has " +
                           std::to_string(batch.encoded.size()) + " encoded samples");
  if (cfg_.on_corrupt == OnCorrupt::Error) {
    try {
      std::rethrow_exception(error);
    } catch (const CorruptImage& e) {
      throw with_skip_hint(e);
    }  // anything else is not about the file: it propagates as it is
  }
  const size_t k = static_cast<size_t>(i);
  const int64_t idx = batch.indices[k];
  try {
    std::rethrow_exception(error);
  } catch (const CorruptImage& e) {
    note_corrupt(idx, e);
  }  // anything else is not about the file: it propagates
  const int64_t N = ds_->size();
  const int64_t per = shape_numel(ds_->sample_shape());
  batch.encoded[k] = EncodedSample{};
  SampleOut out;
  out.u8 = batch.images.u8() + i * per;
  out.plan = &batch.plans[k];
  out.label = batch.labels.i32() + i;
  out.used = &batch.indices[k];
  // The attempts a worker would have made: the order's index (and any
  // corrupt ones it skipped) up to idx, then idx itself.
  const int64_t first = order_.indices[static_cast<size_t>(batch.index * cfg_.batch_size + i)];
  const int64_t done = (idx - first + N) % N + 1;
  if (done >= N)  // a worker would have stopped here: every sample tried
    throw std::runtime_error("data: every sample tried is corrupt (last: " + ds_->name(idx) + ")");
  load_sample(batch.index * cfg_.batch_size + i, (idx + 1) % N, done, epoch_, out);
}

void Loader::build(int64_t b, int64_t slot, uint64_t epoch, uint64_t generation, Slot& out) {
  // order_ is only replaced after in-flight workers finish (stop_epoch), so
  // reading it unlocked here is safe.
  const int64_t n = static_cast<int64_t>(order_.size());
  const int64_t begin = b * cfg_.batch_size, end = std::min(n, begin + cfg_.batch_size);
  const int B = static_cast<int>(end - begin);
  Shape shape = ds_->sample_shape();
  const int64_t per = shape_numel(shape);
  Shape bshape{B};
  bshape.insert(bshape.end(), shape.begin(), shape.end());
  // augment_plans: the uint8 crops, HWC (the slots are sized for them).
  const DType dt = cfg_.augment_plans ? DType::U8 : DType::F32;
  if (cfg_.augment_plans) bshape = {B, shape[1], shape[2], shape[0]};
  Batch& batch = out.batch;
  batch.index = b;
  if (ring_) {  // views of the slot's memory, leased when next() hands the batch out
    char* base = ring_->base(slot);
    batch.images = Tensor::wrap(base, bshape, dt);
    batch.labels = Tensor::wrap(base + ring_->labels_at, {B}, DType::I32);
  } else {
    batch.images = Tensor::empty(bshape, dt);
    batch.labels = Tensor::empty({B}, DType::I32);
  }
  batch.indices.resize(static_cast<size_t>(B));
  if (cfg_.augment_plans) batch.plans.resize(static_cast<size_t>(B));
  if (cfg_.encoded) batch.encoded.resize(static_cast<size_t>(B));
  ds_->will_need(order_.indices.data() + begin, B);
  for (int i = 0; i < B; ++i) {
    {
      std::lock_guard<std::mutex> g(mu_);
      if (generation != generation_) return;  // epoch abandoned: result is discarded
    }
    const size_t k = static_cast<size_t>(i);
    SampleOut so;
    if (cfg_.augment_plans) so.u8 = batch.images.u8() + i * per, so.plan = &batch.plans[k];
    else so.dst = batch.images.f32() + i * per;
    if (cfg_.encoded) so.enc = &batch.encoded[k];
    so.label = batch.labels.i32() + i, so.used = &batch.indices[k];
    load_sample(begin + i, order_.indices[static_cast<size_t>(begin + i)], 0, epoch, so);
  }
  if (cfg_.mixup) {
    const MixupParams& mp = *cfg_.mixup;
    batch.targets = ring_ ? Tensor::wrap(ring_->base(slot) + ring_->targets_at, {B, mp.num_classes}, DType::F32)
                          : Tensor::empty({B, mp.num_classes}, DType::F32);
    Philox rng(cfg_.seed, philox_stream(kPurposeMixup, philox_stream(static_cast<uint64_t>(cfg_.rank), epoch), static_cast<uint64_t>(b)));
    batch.mix = mixup_batch(batch.images.f32(), B, static_cast<int>(shape[0]), static_cast<int>(shape[1]),
                            static_cast<int>(shape[2]), batch.labels.i32(), batch.targets.f32(), rng, mp);
  }
}

int64_t Loader::corrupt_count() const {
  std::lock_guard<std::mutex> lk(mu_);
  return corrupt_count_;
}

std::vector<std::string> Loader::corrupt_names() const {
  std::lock_guard<std::mutex> lk(mu_);
  return {corrupt_names_.begin(), corrupt_names_.end()};
}

}  // namespace vt
