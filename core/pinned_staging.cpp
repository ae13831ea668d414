#include "core/pinned_staging.h"

#include <algorithm>

#include "core/allocator.h"

namespace vt {

namespace {
// Small uploads share sizes after rounding, so a mix of batches reuses the
// same few blocks.
constexpr size_t kMinBlock = size_t(64) << 10;
size_t rounded(size_t bytes) {
  size_t r = kMinBlock;
  while (r < bytes) r *= 2;
  return r;
}
}  // namespace

PinnedStaging::PinnedStaging(int device) : device_(device) {}

PinnedStaging::~PinnedStaging() {
  for (Block& b : blocks_) {
    if (b.state != State::InFlight) continue;
    try {
      b.done.synchronize();
    } catch (...) {  // a failed device: the copy will never read the memory again
    }
  }
}

void* PinnedStaging::acquire(size_t bytes) {
  Block* best = nullptr;
  for (Block& b : blocks_) {
    if (b.state == State::InFlight && b.done.query()) b.state = State::Free;
    if (b.state == State::Free && b.mem.bytes() >= bytes && (!best || b.mem.bytes() < best->mem.bytes())) best = &b;
  }
  if (!best) {
    Block b;
    b.mem = PinnedBuffer(rounded(bytes));
    if (b.mem.page_locked()) b.done = CudaEvent::create(device_);
    blocks_.push_back(std::move(b));
    best = &blocks_.back();
  }
  best->state = State::Acquired;
  return best->mem.data();
}

void PinnedStaging::queued(CudaStreamHandle stream) {
  for (Block& b : blocks_) {
    if (b.state != State::Acquired) continue;
    if (!b.done.defined()) {  // ordinary host memory: no device reads it later
      b.state = State::Free;
      continue;
    }
    b.done.record(stream);
    b.state = State::InFlight;
  }
}

}  // namespace vt
