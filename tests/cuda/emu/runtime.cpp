// The CUDA runtime calls vt_core and the kernels make, served from host
// memory, plus the fiber scheduler state of emu.h. Linked instead of
// libcudart, so "device" pointers are host pointers the tests can read.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include "emu.h"
#include "emu_streams.h"
#include "emu_trace.h"
uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim, gridDim;
float vt_emu_smem[1 << 16];
float vt_emu_xbuf[1024];
namespace vt_emu {
Fibers fib;
void fiber_entry() {
  fib.body();
  fib.state[fib.cur] = 2;
}
void barrier_wait() {
  const unsigned me = fib.cur;
  fib.state[me] = 1;
  swapcontext(&fib.ctx[me], &fib.sched);
  threadIdx = make_uint3(me, 0, 0);
}
bool reverse_thread_order() {
  static const bool reverse = [] {
    const char* v = std::getenv("VT_EMU_THREAD_ORDER");
    return v && std::strcmp(v, "reverse") == 0;
  }();
  return reverse;
}
}

// ---------------------------------------------------------------------------
// The device's work queue (emu_streams.h). All of its state is guarded by
// one mutex; ops run without it, one at a time, on the device thread.
namespace vt_emu {
namespace {

struct Stream;
struct Point {  // a position in a stream: done once `seq` ops of it have run
  Stream* stream = nullptr;
  uint64_t seq = 0;
};
struct Op {
  std::function<void()> fn;  // empty for an event record or a stream wait
  std::vector<Point> waits;  // run only once all of these are done
};
struct Stream {
  std::deque<Op> queue;
  uint64_t queued = 0, completed = 0;
  bool blocking = true;  // synchronises with the legacy default stream
};
// An event: the point of its latest record (CUDA: a wait or query binds to
// the most recent cudaEventRecord at the time of the call), and the device
// time at which that record ran.
struct EventState {
  Point last;
  double ms = 0;
  bool timing = true;
};

StreamMode read_mode() {
  const char* v = std::getenv("VT_EMU_STREAMS");
  if (!v || !*v || std::strcmp(v, "sync") == 0) return StreamMode::Sync;
  if (std::strcmp(v, "random") == 0) return StreamMode::Random;
  if (std::strcmp(v, "delayed") == 0) return StreamMode::Delayed;
  std::fprintf(stderr, "emu: VT_EMU_STREAMS='%s' is not one of sync, random, delayed\n", v);
  std::abort();
}

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

thread_local bool tl_in_device = false;
thread_local Stream* tl_default_stream = nullptr;

class Engine {
 public:
  explicit Engine(StreamMode mode) : mode_(mode) {
    uint64_t seed = 0;
    if (const char* s = std::getenv("VT_EMU_SEED"); s && *s) seed = std::strtoull(s, nullptr, 10);
    else seed = std::random_device{}();
    rng_.seed(seed);
    std::fprintf(stderr, "emu: streams %s%s\n", mode == StreamMode::Random ? "random" : "delayed",
                 mode == StreamMode::Random ? (" (VT_EMU_SEED=" + std::to_string(seed) + ")").c_str() : "");
    legacy_ = new_stream(true);
    std::thread([this] { run(); }).detach();
  }

  Stream* new_stream(bool blocking) {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.push_back(std::make_unique<Stream>());
    streams_.back()->blocking = blocking;
    return streams_.back().get();
  }
  Stream* legacy() const { return legacy_; }
  // The calling thread's per-thread default stream (a blocking stream).
  Stream* per_thread() {
    if (!tl_default_stream) tl_default_stream = new_stream(true);
    return tl_default_stream;
  }
  Stream* resolve(cudaStream_t s) {
    if (s == nullptr || s == cudaStreamPerThread) return per_thread();
    if (s == cudaStreamLegacy) return legacy_;
    return reinterpret_cast<Stream*>(s);
  }

  // Queues an op; returns its point. The legacy default stream orders
  // itself with every blocking stream both ways (CUDA Runtime API, "Stream
  // synchronization behavior": "The legacy default stream is an implicit
  // stream which synchronizes with all other blocking streams").
  Point enqueue(Stream* s, Op op, EventState* record = nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    if (s == legacy_) {
      for (auto& o : streams_)
        if (o.get() != legacy_ && o->blocking && o->queued > o->completed) op.waits.push_back({o.get(), o->queued});
    } else if (s->blocking && legacy_->queued > legacy_->completed) {
      op.waits.push_back({legacy_, legacy_->queued});
    }
    s->queue.push_back(std::move(op));
    const Point p{s, ++s->queued};
    if (record) record->last = p;  // under the lock: a concurrent wait or query sees the op and its point together
    cv_device_.notify_one();
    return p;
  }
  Point tail(Stream* s) {
    std::lock_guard<std::mutex> lock(mu_);
    return {s, s->queued};
  }
  bool done(Point p) {
    std::lock_guard<std::mutex> lock(mu_);
    return done_locked(p);
  }
  // Blocks the host until p has run (delayed mode: the device thread runs
  // just the ops p needs).
  void wait(Point p) {
    if (tl_in_device) {
      std::fprintf(stderr, "emu: a synchronising call inside device work (a graph or library op)\n");
      std::abort();
    }
    std::unique_lock<std::mutex> lock(mu_);
    if (done_locked(p)) return;
    wanted_.push_back(p);
    cv_device_.notify_one();
    cv_host_.wait(lock, [&] { return done_locked(p); });
  }
  // Whether p has run, for a query: never blocks. In delayed mode a query
  // that finds p pending also asks the device to get there (without
  // waiting), so a host that polls sees the work complete eventually, as on
  // a GPU, but not before its first poll.
  bool query(Point p) {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_locked(p)) return true;
    if (mode_ == StreamMode::Delayed) {
      wanted_.push_back(p);
      cv_device_.notify_one();
    }
    return false;
  }
  void wait_all() {
    std::vector<Point> tails;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& s : streams_) tails.push_back({s.get(), s->queued});
    }
    for (const Point& p : tails) wait(p);
  }
  std::mutex& mu() { return mu_; }

 private:
  static bool done_locked(Point p) { return !p.stream || p.stream->completed >= p.seq; }
  static bool runnable(const Stream& s) {
    if (s.queue.empty()) return false;
    for (const Point& w : s.queue.front().waits)
      if (!done_locked(w)) return false;
    return true;
  }
  // The stream whose head op must run next for p to be reached, following
  // the waits of heads that cannot run yet (a wait always names a record
  // queued before it, so this ends).
  static Stream* needed_for(Point p) {
    while (!done_locked(p)) {
      const Op& head = p.stream->queue.front();
      bool blocked = false;
      for (const Point& w : head.waits)
        if (!done_locked(w)) {
          p = w;
          blocked = true;
          break;
        }
      if (!blocked) return p.stream;
    }
    return nullptr;
  }
  Stream* pick() {
    if (mode_ == StreamMode::Delayed) {
      wanted_.erase(std::remove_if(wanted_.begin(), wanted_.end(), [](const Point& p) { return done_locked(p); }),
                    wanted_.end());
      for (const Point& p : wanted_)
        if (Stream* s = needed_for(p)) return s;
      return nullptr;
    }
    std::vector<Stream*> ready;
    for (auto& s : streams_)
      if (runnable(*s)) ready.push_back(s.get());
    if (ready.empty()) return nullptr;
    return ready[std::uniform_int_distribution<size_t>(0, ready.size() - 1)(rng_)];
  }
  void run() {
    tl_in_device = true;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      Stream* s = pick();
      if (!s) {
        cv_device_.wait(lock);
        continue;
      }
      Op op = std::move(s->queue.front());
      s->queue.pop_front();
      // Random pauses let the host run ahead of the device by a varying
      // number of calls.
      const unsigned pause = mode_ == StreamMode::Random && rng_() % 8 == 0 ? rng_() % 200 : 0;
      lock.unlock();
      if (pause) std::this_thread::sleep_for(std::chrono::microseconds(pause));
      try {
        if (op.fn) op.fn();
      } catch (const std::exception& e) {
        device_fault(e.what());
      } catch (...) {
        device_fault("unknown exception in device work");
      }
      lock.lock();
      ++s->completed;
      cv_host_.notify_all();
    }
  }

  StreamMode mode_;
  std::mutex mu_;
  std::condition_variable cv_device_, cv_host_;
  std::vector<std::unique_ptr<Stream>> streams_;  // never freed: queued ops and points refer to them
  std::vector<Point> wanted_;
  Stream* legacy_ = nullptr;
  std::mt19937_64 rng_;
};

Engine* engine() {  // leaked: ops may still be queued while statics are destroyed at exit
  static Engine* e = stream_mode() == StreamMode::Sync ? nullptr : new Engine(stream_mode());
  return e;
}

std::atomic<bool> g_fault{false};

}  // namespace

StreamMode stream_mode() {
  static const StreamMode m = read_mode();
  return m;
}
bool in_device() { return tl_in_device; }
void device_fault(const char* why) {
  if (!g_fault.exchange(true)) std::fprintf(stderr, "emu: device fault: %s\n", why);
}
void submit(cudaStream_t stream, std::function<void()> op) {
  if (tl_in_device) return op();
  if (capturing()) return capture_push(std::move(op));
  if (!engine()) return op();
  engine()->enqueue(engine()->resolve(stream), Op{std::move(op), {}});
}
void drain(cudaStream_t stream) {
  if (tl_in_device || !engine()) return;
  engine()->wait(engine()->tail(engine()->resolve(stream)));
}
// Queues `op` on `stream` and blocks until it has run (a copy documented
// as synchronous with respect to the host).
void submit_and_wait(cudaStream_t stream, std::function<void()> op) {
  if (!engine() || tl_in_device) return op();
  Engine& e = *engine();
  e.wait(e.enqueue(e.resolve(stream), Op{std::move(op), {}}));
}
}  // namespace vt_emu

// "Device" memory is host memory. cudaMalloc calls are counted, so a test
// can check that a steady-state step allocates nothing (vt_emu_malloc_count).
// The bytes live are tracked for cudaMemGetInfo: its total is
// VT_EMU_MEMORY_BYTES when set (a test hook: a test makes a configuration
// "not fit" by giving the device little memory), else totalGlobalMem's
// 1 GiB; free is the total less the bytes live. With VT_EMU_MEMORY_BYTES
// set, a cudaMalloc past the total fails (cudaErrorMemoryAllocation), as on
// a full device; without it none does. Device and page-locked (cudaHostAlloc)
// allocations are kept as address ranges, so a copy knows what its host side
// is: pinned memory is read and written when the copy runs, pageable memory
// as the driver does it (below).
namespace vt_emu {
size_t malloc_count = 0;
size_t live_bytes = 0;
std::map<uintptr_t, size_t> live;    // device allocations: start -> bytes
std::map<uintptr_t, size_t> pinned;  // cudaHostAlloc: start -> bytes
std::mutex live_mu;
size_t total_memory() {
  const char* e = std::getenv("VT_EMU_MEMORY_BYTES");
  return e && std::strtoull(e, nullptr, 10) > 0 ? static_cast<size_t>(std::strtoull(e, nullptr, 10)) : size_t(1) << 30;
}
bool in_ranges(const std::map<uintptr_t, size_t>& m, const void* p) {
  std::lock_guard<std::mutex> lock(live_mu);
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  auto it = m.upper_bound(a);
  if (it == m.begin()) return false;
  --it;
  return a < it->first + std::max<size_t>(it->second, 1);
}
enum class Mem { Device, Pinned, Pageable };
Mem kind_of(const void* p) {
  if (in_ranges(live, p)) return Mem::Device;
  if (in_ranges(pinned, p)) return Mem::Pinned;
  return Mem::Pageable;
}
}  // namespace vt_emu
size_t vt_emu_malloc_count() { return vt_emu::malloc_count; }
cudaError_t cudaMalloc(void** p, size_t n) {
  ++vt_emu::malloc_count;
  std::lock_guard<std::mutex> lock(vt_emu::live_mu);
  if (std::getenv("VT_EMU_MEMORY_BYTES") && vt_emu::live_bytes + n > vt_emu::total_memory()) {
    *p = nullptr;
    return cudaErrorMemoryAllocation;
  }
  *p = std::malloc(n ? n : 1);
  vt_emu::live[reinterpret_cast<uintptr_t>(*p)] = n;
  vt_emu::live_bytes += n;
  return cudaSuccess;
}
// cudaFree and cudaFreeHost wait for the device to be idle before the
// memory goes (as the driver does; the caching allocator, core/allocator.h,
// calls them only for memory nothing queued uses), so queued work never
// reads freed host memory here.
cudaError_t cudaFree(void* p) {
  if (vt_emu::engine()) vt_emu::engine()->wait_all();
  std::lock_guard<std::mutex> lock(vt_emu::live_mu);
  auto it = vt_emu::live.find(reinterpret_cast<uintptr_t>(p));
  if (it != vt_emu::live.end()) vt_emu::live_bytes -= it->second, vt_emu::live.erase(it);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  std::lock_guard<std::mutex> lock(vt_emu::live_mu);
  *total = vt_emu::total_memory();
  *free = *total > vt_emu::live_bytes ? *total - vt_emu::live_bytes : 0;
  return cudaSuccess;
}
// Pinned host memory (core/pinned_memory.h): host memory the copies treat
// as page-locked.
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) {
  *p = std::malloc(n ? n : 1);
  std::lock_guard<std::mutex> lock(vt_emu::live_mu);
  vt_emu::pinned[reinterpret_cast<uintptr_t>(*p)] = n;
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
  if (vt_emu::engine()) vt_emu::engine()->wait_all();
  {
    std::lock_guard<std::mutex> lock(vt_emu::live_mu);
    vt_emu::pinned.erase(reinterpret_cast<uintptr_t>(p));
  }
  std::free(p);
  return cudaSuccess;
}

// Copies. Device->host copies are counted: the host waits for the GPU at
// each, so a test can check how often a training loop reads
// (vt_emu_d2h_count). Host-to-device copies from pageable memory are counted
// too (vt_emu_pageable_h2d_count): the driver may make the host wait for
// the stream before each (CUDA Runtime API, "API synchronization
// behavior": "For transfers from pageable host memory to device memory, a
// stream sync is performed before the copy is initiated"), so an input path
// that overlaps must stage through pinned memory.
// What a copy does with its host side, by the same section:
//  - pageable source, device destination: the source is read at the call
//    (the driver stages it), the device written when the copy runs;
//  - device source, pageable destination: the call returns once the copy
//    has completed (it waits for the stream);
//  - pinned memory on either side: read and written when the copy runs, so
//    the host must not touch it before an event recorded after the copy
//    has completed;
//  - synchronous cudaMemcpy: from pinned memory or to the host, returns
//    once done; from pageable memory, once staged; device to device, no host
//    synchronisation at all.
namespace vt_emu {
size_t d2h_count = 0, pageable_h2d_count = 0;
std::vector<VtEmuAsyncOp>* trace = nullptr;
cudaError_t capture_violation();  // below: a call a capture may not contain

// One copy of `height` rows of `width` bytes.
// The direction is the caller's `kind` (cudaMemcpyDefault: from the
// pointers); whether a host side is pinned or pageable, from the ranges.
cudaError_t copy(void* d, size_t dpitch, const void* s, size_t spitch, size_t width, size_t height,
                 cudaMemcpyKind kind, cudaStream_t st, bool async) {
  Mem dk = kind_of(d), sk = kind_of(s);
  if (kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice) dk = Mem::Device;
  if (kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice) sk = Mem::Device;
  if ((kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost) && dk == Mem::Device) dk = Mem::Pageable;
  if ((kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost) && sk == Mem::Device) sk = Mem::Pageable;
  const bool to_host = dk != Mem::Device, from_host = sk != Mem::Device;
  if (to_host && !from_host) ++d2h_count;
  auto rows = [=](const void* src, size_t sp) {
    for (size_t r = 0; r < height; ++r)
      std::memmove(static_cast<char*>(d) + r * dpitch, static_cast<const char*>(src) + r * sp, width);
  };
  if (capturing()) {  // a copy node: reads its source when the graph runs, as on a GPU
    if (to_host) return capture_violation();  // a host read inside the step
    capture_push([=] { rows(s, spitch); });
    return cudaSuccess;
  }
  if (!engine()) {
    rows(s, spitch);
    return cudaSuccess;
  }
  if (sk == Mem::Pageable && !to_host) {  // staged at the call
    ++pageable_h2d_count;
    auto staged = std::make_shared<std::vector<char>>(width * height);
    for (size_t r = 0; r < height; ++r) std::memcpy(staged->data() + r * width, static_cast<const char*>(s) + r * spitch, width);
    if (!async) drain(st);  // cudaMemcpy: "a stream sync is performed before the copy is initiated"
    submit(st, [=] { rows(staged->data(), width); });
    return cudaSuccess;
  }
  const bool host_waits = dk == Mem::Pageable || sk == Mem::Pageable || (!async && (to_host || from_host));
  if (host_waits)
    submit_and_wait(st, [=] { rows(s, spitch); });
  else
    submit(st, [=] { rows(s, spitch); });
  return cudaSuccess;
}
}  // namespace vt_emu
size_t vt_emu_d2h_count() { return vt_emu::d2h_count; }
size_t vt_emu_pageable_h2d_count() { return vt_emu::pageable_h2d_count; }
void vt_emu_trace_async(std::vector<VtEmuAsyncOp>* sink) { vt_emu::trace = sink; }
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  return vt_emu::copy(d, n, s, n, n, 1, k, nullptr, false);
}
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
  if (vt_emu::trace && !vt_emu::capturing()) vt_emu::trace->push_back({VtEmuAsyncOp::Copy, st, nullptr, d, s});
  return vt_emu::copy(d, n, s, n, n, 1, k, st, true);
}
// Pitched copies (data_pipeline/device: decoded images into and out of
// row-pitched buffers); not inside a capture (nothing captured uses them).
cudaError_t cudaMemcpy2DAsync(void* d, size_t dpitch, const void* s, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind k, cudaStream_t st) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;  // as the runtime refuses
  if (vt_emu::trace) vt_emu::trace->push_back({VtEmuAsyncOp::Copy, st, nullptr, d, s});
  return vt_emu::copy(d, dpitch, s, spitch, width, height, k, st, true);
}
// Memsets of device memory are asynchronous with respect to the host, the
// synchronous one too ("API synchronization behavior": "The synchronous
// memset functions are asynchronous with respect to the host except when
// the target is pinned host memory or a Unified Memory region").
cudaError_t cudaMemset(void* d, int v, size_t n) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  vt_emu::submit(nullptr, [=] { std::memset(d, v, n); });
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t st) {
  vt_emu::submit(st, [=] { std::memset(d, v, n); });
  return cudaSuccess;
}
// One emulated device, or VT_EMU_DEVICES of them (data-parallel tests: one
// per rank, as on a multi-GPU node); all of them are host memory.
namespace vt_emu {
int current_device = 0;
}
cudaError_t cudaGetDevice(int* d) { *d = vt_emu::current_device; return cudaSuccess; }
cudaError_t cudaSetDevice(int d) { vt_emu::current_device = d; return cudaSuccess; }
cudaError_t cudaGetDeviceCount(int* n) {
  const char* e = std::getenv("VT_EMU_DEVICES");
  *n = e && std::atoi(e) > 0 ? std::atoi(e) : 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int) {
  std::memset(p, 0, sizeof *p);
  std::strcpy(p->name, "CUDA emulator (host memory)");
  p->totalGlobalMem = vt_emu::total_memory();
  return cudaSuccess;
}
const char* cudaGetErrorString(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "no error (emu)";
    case cudaErrorNotReady: return "device not ready (emu)";
    case cudaErrorMemoryAllocation: return "out of memory (emu)";
    case cudaErrorLaunchFailure: return "unspecified launch failure (emu: see the device fault above)";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream (emu)";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture (emu)";
    default: return "emu";
  }
}
// A fault in device work (an exception out of an emulated kernel or
// library op) is sticky, as a kernel fault is on a GPU: every later
// synchronising call and cudaGetLastError report it.
cudaError_t cudaGetLastError() { return vt_emu::g_fault.load() ? cudaErrorLaunchFailure : cudaSuccess; }
cudaError_t cudaPeekAtLastError() { return cudaGetLastError(); }
cudaError_t cudaDeviceSynchronize() {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  if (vt_emu::engine()) vt_emu::engine()->wait_all();
  return cudaGetLastError();
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  vt_emu::drain(s);
  return cudaGetLastError();
}
cudaError_t cudaStreamQuery(cudaStream_t s) {
  if (!vt_emu::engine()) return cudaGetLastError();
  vt_emu::Engine& e = *vt_emu::engine();
  if (vt_emu::g_fault.load()) return cudaErrorLaunchFailure;
  return e.query(e.tail(e.resolve(s))) ? cudaSuccess : cudaErrorNotReady;
}
// Streams: handles of the engine's streams (in sync mode distinct dummy
// handles: all work has run at the call, every stream is always idle).
// Events complete when their record has run; a test can hold every event
// back (vt_emu_hold_events) to observe what waits for them.
namespace vt_emu {
bool hold_events = false;
}
void vt_emu_hold_events(bool hold) { vt_emu::hold_events = hold; }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned flags) {
  if (vt_emu::engine()) {
    *s = reinterpret_cast<cudaStream_t>(vt_emu::engine()->new_stream((flags & cudaStreamNonBlocking) == 0));
    return cudaSuccess;
  }
  static std::atomic<uintptr_t> next{0x1000};
  *s = reinterpret_cast<cudaStream_t>(next += 0x10);
  return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithFlags(s, cudaStreamDefault); }
// A stream destroyed with work queued keeps running it ("the function will
// return immediately and the resources associated with stream will be
// released automatically once the device has completed all work").
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
namespace vt_emu {
using Event = std::shared_ptr<EventState>;  // a cudaEvent_t points at one
Event& event(cudaEvent_t e) { return *reinterpret_cast<Event*>(e); }
}  // namespace vt_emu
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned flags) {
  auto* ev = new vt_emu::Event(std::make_shared<vt_emu::EventState>());
  (*ev)->timing = (flags & cudaEventDisableTiming) == 0;
  *e = reinterpret_cast<cudaEvent_t>(ev);
  return cudaSuccess;
}
cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, cudaEventDefault); }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (vt_emu::trace) vt_emu::trace->push_back({VtEmuAsyncOp::Record, s, e, nullptr, nullptr});
  vt_emu::Event ev = vt_emu::event(e);
  if (vt_emu::capturing()) {  // a record node: the event completes with the replay's work before it
    vt_emu::capture_push([ev] { ev->ms = vt_emu::now_ms(); });
    return cudaSuccess;
  }
  if (!vt_emu::engine()) {
    ev->ms = vt_emu::now_ms();
    return cudaSuccess;
  }
  vt_emu::Engine& en = *vt_emu::engine();
  en.enqueue(en.resolve(s), vt_emu::Op{[ev] { ev->ms = vt_emu::now_ms(); }, {}}, ev.get());
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (vt_emu::hold_events) return cudaErrorNotReady;
  if (!vt_emu::engine()) return cudaSuccess;
  vt_emu::Engine& en = *vt_emu::engine();
  vt_emu::Point p;
  {
    std::lock_guard<std::mutex> lock(en.mu());
    p = vt_emu::event(e)->last;
  }
  return en.query(p) ? cudaGetLastError() : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  if (!vt_emu::engine()) return cudaSuccess;
  vt_emu::Engine& en = *vt_emu::engine();
  vt_emu::Point p;
  {
    std::lock_guard<std::mutex> lock(en.mu());
    p = vt_emu::event(e)->last;
  }
  en.wait(p);
  return cudaGetLastError();
}
// The device time between two records' runs (work runs in order, so the
// time between them is the work's; cudaErrorNotReady until both ran).
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (cudaEventQuery(start) == cudaErrorNotReady || cudaEventQuery(end) == cudaErrorNotReady) return cudaErrorNotReady;
  const vt_emu::Event &a = vt_emu::event(start), &b = vt_emu::event(end);
  if (!a->timing || !b->timing) return cudaErrorInvalidResourceHandle;
  *ms = static_cast<float>(b->ms - a->ms);
  return cudaSuccess;
}
// The event's state lives on in the ops that record or wait for it.
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<vt_emu::Event*>(e);
  return cudaSuccess;
}
// A cross-stream wait: later work on `s` runs only once the event's latest
// record (at the time of this call) has run; no-op for an event never
// recorded (CUDA Runtime API, cudaStreamWaitEvent).
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  if (vt_emu::trace) vt_emu::trace->push_back({VtEmuAsyncOp::Wait, s, e, nullptr, nullptr});
  if (vt_emu::capturing() || !vt_emu::engine()) return cudaSuccess;
  vt_emu::Engine& en = *vt_emu::engine();
  vt_emu::Point p;
  {
    std::lock_guard<std::mutex> lock(en.mu());
    p = vt_emu::event(e)->last;
  }
  if (!p.stream) return cudaSuccess;
  en.enqueue(en.resolve(s), vt_emu::Op{{}, {p}});
  return cudaSuccess;
}
// CUDA Graphs (core/cuda_graph.h). One capture at a time, owned by the host
// thread that began it: what that thread queues while it is open, on any
// stream (the trainers queue everything on the compute stream), is
// recorded, as in cudaStreamCaptureModeThreadLocal; other threads (the
// loader's, the uploader's) keep queueing work as usual. Kernel launches
// (emu.h's Launcher), async copies and memsets, library calls become
// closures over their arguments; a call that would make the host wait (a
// synchronous copy or memset, a device->host copy, a stream or event
// synchronize) invalidates the capture and fails, as on a GPU.
// cudaGraphLaunch queues the closures as one op on its stream: the graph
// runs in order, after what the stream queued before, as one unit.
namespace vt_emu {
struct Graph {
  std::vector<std::function<void()>> ops;
};
Graph* open_capture = nullptr;  // touched by the capturing thread only
std::atomic<bool> capture_open{false};
thread_local bool tl_capturing = false;
bool capture_invalid = false;
std::atomic<size_t> graph_launches{0};
bool capturing() { return tl_capturing && !tl_in_device; }
void capture_push(std::function<void()> op) { open_capture->ops.push_back(std::move(op)); }
cudaError_t capture_violation() {
  capture_invalid = true;
  return cudaErrorStreamCaptureImplicit;
}
}  // namespace vt_emu
size_t vt_emu_graph_launches() { return vt_emu::graph_launches.load(); }
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  if (vt_emu::capture_open.exchange(true)) return cudaErrorIllegalState;
  vt_emu::open_capture = new vt_emu::Graph();
  vt_emu::tl_capturing = true;
  vt_emu::capture_invalid = false;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* g) {
  *g = nullptr;
  if (!vt_emu::tl_capturing) return cudaErrorIllegalState;
  vt_emu::Graph* c = vt_emu::open_capture;
  vt_emu::open_capture = nullptr;
  vt_emu::tl_capturing = false;
  vt_emu::capture_open = false;
  if (vt_emu::capture_invalid) {
    delete c;
    return cudaErrorStreamCaptureInvalidated;
  }
  *g = reinterpret_cast<cudaGraph_t>(c);
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* st) {
  *st = vt_emu::tl_capturing ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long) {
  *e = reinterpret_cast<cudaGraphExec_t>(new vt_emu::Graph(*reinterpret_cast<vt_emu::Graph*>(g)));
  return cudaSuccess;
}
// The replay runs a copy of the instantiated graph's ops: the exec may be
// destroyed (or relaunched) while this launch is still queued.
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  ++vt_emu::graph_launches;
  auto ops = std::make_shared<std::vector<std::function<void()>>>(reinterpret_cast<vt_emu::Graph*>(e)->ops);
  vt_emu::submit(s, [ops] {
    for (auto& op : *ops) op();
  });
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  delete reinterpret_cast<vt_emu::Graph*>(e);
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete reinterpret_cast<vt_emu::Graph*>(g);
  return cudaSuccess;
}
