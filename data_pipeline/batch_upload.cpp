#include "data_pipeline/batch_upload.h"

#include <stdexcept>
#include <string>
#include <utility>

#include "core/allocator.h"

namespace vt {

BatchUploader::BatchUploader(Loader& loader, Device device, Prepare prepare, Decode decode)
    : loader_(loader), device_(device), prepare_(std::move(prepare)), decode_(std::move(decode)) {
  if (!device_.is_cuda())
    throw std::invalid_argument("BatchUploader: device " + device_.str() + " is not a CUDA device");
  stream_ = CudaStream::create(device_.index);
  for (Slot& s : slots_) {
    s.copied = CudaEvent::create(device_.index);
    s.released = CudaEvent::create(device_.index);
  }
  allocated_ = CudaEvent::create(device_.index);
}

BatchUploader::~BatchUploader() {
  // Queued copies still read the pinned slots and write the device slots.
  try {
    stream_.synchronize();
  } catch (...) {  // a destructor must not throw; the device is then unusable anyway
  }
}

int BatchUploader::host_batches_held() const {
  int n = 0;
  for (const Slot& s : slots_) n += s.host.images.defined() ? 1 : 0;
  return n;
}

void BatchUploader::release_completed() {
  for (Slot& s : slots_)
    if (s.host.images.defined() && s.copied.query()) s.host = Batch{};
}

// A device buffer for `host`: `buffer` (owned, allocated at the first batch
// and whenever a batch is larger) viewed with the host's shape.
Tensor BatchUploader::device_view(Tensor& buffer, const Tensor& host) {
  if (!buffer.defined() || buffer.dtype() != host.dtype() || buffer.nbytes() < host.nbytes()) {
    // Allocated on the compute stream, written on the upload stream: the
    // caching allocator must not hand it out again before that stream is
    // done with it.
    buffer = Tensor::empty({host.numel()}, host.dtype(), device_);
    cuda_record_stream(buffer.raw(), stream_.handle());
    // The caching allocator hands out a block freed on the compute stream as
    // soon as the free is queued (stream-ordered reuse, as PyTorch's), so
    // kernels queued before may still read or write it: the upload stream,
    // which writes it next, waits for them (PyTorch's rule for a block used
    // on another stream than its allocation's: order that stream after it).
    allocated_.record(nullptr);
    allocated_.wait_on(stream_.handle());
  }
  return Tensor::wrap(buffer.raw(), host.shape(), host.dtype(), device_);
}

void BatchUploader::stage() {
  Staged st;
  Batch host;
  try {
    st.has = loader_.next(host);
    if (st.has && prepare_) prepare_(host);
  } catch (...) {
    st.error = std::current_exception();
    st.has = false;
  }
  if (!st.has) {
    staged_ = std::move(st);
    return;
  }
  st.slot = next_slot_;
  next_slot_ ^= 1;
  Slot& s = slots_[static_cast<size_t>(st.slot)];
  if (s.host.images.defined()) {  // its previous copy was long waited for by a step; make sure
    s.copied.synchronize();
    s.host = Batch{};
  }
  const CudaStreamHandle up = stream_.handle();
  // The copy overwrites the slot only after every step that read it is done.
  s.released.wait_on(up);
  DeviceBatch& d = st.batch;
  try {
    d.images = device_view(s.images, host.images);
    if (!host.encoded.empty()) {
      // The decode runs on the upload stream, which waits (above) for the
      // steps that read the slot.
      if (!decode_) throw std::logic_error("BatchUploader: an encoded batch (data.decode_on=device) without a decode hook");
      decode_(host, d.images, up);
      for (size_t i = 0; i < host.encoded.size(); ++i)  // the host-made crops
        if (!host.encoded[i].data)
          copy_async(d.images.select(0, static_cast<int64_t>(i)), host.images.select(0, static_cast<int64_t>(i)), up);
    } else {
      copy_async(d.images, host.images.contiguous(), up);
    }
    d.labels = device_view(s.labels, host.labels);
    copy_async(d.labels, host.labels.contiguous(), up);
    if (host.targets.defined()) {
      d.targets = device_view(s.targets, host.targets);
      copy_async(d.targets, host.targets.contiguous(), up);
    }
  } catch (...) {
    Staged failed;
    failed.error = std::current_exception();
    // Work queued before the error may still read the host batch: wait for
    // it before the batch goes (a broken device may refuse that too).
    try {
      stream_.synchronize();
    } catch (...) {
    }
    staged_ = std::move(failed);
    return;
  }
  d.index = host.index;
  d.mix = host.mix;
  d.indices = host.indices;
  d.plans = host.plans;
  s.copied.record(up);
  d.host_labels = host.labels.clone();
  s.host = std::move(host);  // keeps the pinned slot leased until `copied` completed
  staged_ = std::move(st);
}

bool BatchUploader::next(DeviceBatch& out) {
  release_completed();
  // Every step that read the current slot has been queued by now.
  if (current_slot_ >= 0) slots_[static_cast<size_t>(current_slot_)].released.record(nullptr);
  current_slot_ = -1;
  out = DeviceBatch{};
  if (!staged_) stage();
  Staged st = std::move(*staged_);
  staged_.reset();
  if (st.error) std::rethrow_exception(st.error);
  if (!st.has) return false;
  slots_[static_cast<size_t>(st.slot)].copied.wait_on(nullptr);  // the compute stream waits for the copy
  current_slot_ = st.slot;
  out = std::move(st.batch);
  return true;
}

void BatchUploader::prefetch() {
  release_completed();
  if (!staged_) stage();
}

void BatchUploader::discard() {
  if (!staged_) return;
  if (staged_->has) {  // the slot is refilled by the next stage(); its copy may run on
    next_slot_ ^= 1;
  }
  staged_.reset();
}

}  // namespace vt
