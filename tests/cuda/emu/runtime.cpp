// The CUDA runtime calls vt_core and the kernels make, served from host
// memory, plus the fiber scheduler state of emu.h. Linked instead of
// libcudart, so "device" pointers are host pointers the tests can read.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include "emu.h"
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
// "Device" memory is host memory. cudaMalloc calls are counted, so a test
// can check that a steady-state step allocates nothing (vt_emu_malloc_count).
// The bytes live are tracked for cudaMemGetInfo: its total is
// VT_EMU_MEMORY_BYTES when set (a test hook: a test makes a configuration
// "not fit" by giving the device little memory), else totalGlobalMem's
// 1 GiB; free is the total less the bytes live. With VT_EMU_MEMORY_BYTES
// set, a cudaMalloc past the total fails (cudaErrorMemoryAllocation), as on
// a full device; without it none does.
namespace vt_emu {
size_t malloc_count = 0;
size_t live_bytes = 0;
std::unordered_map<void*, size_t> live;
std::mutex live_mu;
size_t total_memory() {
  const char* e = std::getenv("VT_EMU_MEMORY_BYTES");
  return e && std::strtoull(e, nullptr, 10) > 0 ? static_cast<size_t>(std::strtoull(e, nullptr, 10)) : size_t(1) << 30;
}
}
size_t vt_emu_malloc_count() { return vt_emu::malloc_count; }
cudaError_t cudaMalloc(void** p, size_t n) {
  ++vt_emu::malloc_count;
  std::lock_guard<std::mutex> lock(vt_emu::live_mu);
  if (std::getenv("VT_EMU_MEMORY_BYTES") && vt_emu::live_bytes + n > vt_emu::total_memory()) {
    *p = nullptr;
    return cudaErrorMemoryAllocation;
  }
  *p = std::malloc(n ? n : 1);
  vt_emu::live[*p] = n;
  vt_emu::live_bytes += n;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  std::lock_guard<std::mutex> lock(vt_emu::live_mu);
  auto it = vt_emu::live.find(p);
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
// Device->host copies are counted: the host waits for the GPU at each, so a
// test can check how often a training loop reads (vt_emu_d2h_count).
namespace vt_emu {
size_t d2h_count = 0;
std::vector<VtEmuAsyncOp>* trace = nullptr;
}
size_t vt_emu_d2h_count() { return vt_emu::d2h_count; }
namespace vt_emu {
cudaError_t capture_violation();  // below: a call a capture may not contain
}
cudaError_t cudaMemcpy(void* d, const void* s, size_t n, cudaMemcpyKind k) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  if (k == cudaMemcpyDeviceToHost) ++vt_emu::d2h_count;
  std::memmove(d, s, n);
  return cudaSuccess;
}
void vt_emu_trace_async(std::vector<VtEmuAsyncOp>* sink) { vt_emu::trace = sink; }
cudaError_t cudaMemcpyAsync(void* d, const void* s, size_t n, cudaMemcpyKind k, cudaStream_t st) {
  if (vt_emu::capturing()) {  // a copy node: reads its source when the graph runs, as on a GPU
    if (k == cudaMemcpyDeviceToHost) return vt_emu::capture_violation();  // a host read inside the step
    vt_emu::capture_push([=] { std::memmove(d, s, n); });
    return cudaSuccess;
  }
  if (k == cudaMemcpyDeviceToHost) ++vt_emu::d2h_count;
  if (vt_emu::trace) vt_emu::trace->push_back({VtEmuAsyncOp::Copy, st, nullptr, d, s});
  std::memmove(d, s, n);
  return cudaSuccess;
}
// Pitched copies (data_pipeline/device: decoded images into and out of
// row-pitched buffers); not inside a capture (nothing captured uses them).
cudaError_t cudaMemcpy2DAsync(void* d, size_t dpitch, const void* s, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind k, cudaStream_t) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;  // as the runtime refuses
  if (k == cudaMemcpyDeviceToHost) ++vt_emu::d2h_count;
  for (size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(d) + r * dpitch, static_cast<const char*>(s) + r * spitch, width);
  return cudaSuccess;
}
// Pinned host memory (core/pinned_memory.h) is host memory like the rest.
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned) {
  *p = std::malloc(n ? n : 1);
  return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemset(void* d, int v, size_t n) {
  if (vt_emu::capturing()) return vt_emu::capture_violation();
  std::memset(d, v, n);
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
const char* cudaGetErrorString(cudaError_t) { return "emu"; }
cudaError_t cudaGetLastError() { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  return vt_emu::capturing() ? vt_emu::capture_violation() : cudaSuccess;
}
// Streams are distinct dummy handles; work runs at launch, so every stream is
// always idle. Events complete at once unless a test holds them back
// (vt_emu_hold_events) to observe what waits for them.
namespace vt_emu {
bool hold_events = false;
}
void vt_emu_hold_events(bool hold) { vt_emu::hold_events = hold; }
cudaError_t cudaStreamCreate(cudaStream_t* s) {
  static uintptr_t next = 0x1000;
  *s = reinterpret_cast<cudaStream_t>(next += 0x10);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t) { return cudaSuccess; }
// An event holds the host time of its last record (work runs at launch, so
// the time between two records is the work's: cudaEventElapsedTime).
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  *e = reinterpret_cast<cudaEvent_t>(new double(0));
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  if (vt_emu::trace) vt_emu::trace->push_back({VtEmuAsyncOp::Record, s, e, nullptr, nullptr});
  *reinterpret_cast<double*>(e) =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  *ms = static_cast<float>(*reinterpret_cast<double*>(end) - *reinterpret_cast<double*>(start));
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t) { return vt_emu::hold_events ? cudaErrorNotReady : cudaSuccess; }
cudaError_t cudaEventSynchronize(cudaEvent_t) {
  return vt_emu::capturing() ? vt_emu::capture_violation() : cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<double*>(e);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* d, int v, size_t n, cudaStream_t) {
  if (vt_emu::capturing()) vt_emu::capture_push([=] { std::memset(d, v, n); });
  else std::memset(d, v, n);
  return cudaSuccess;
}
// Stream flags and cross-stream waits: work has already run at launch, so a
// wait is satisfied at once (train/grad_allreduce_nccl.cpp orders its NCCL
// stream after the compute stream with them).
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned) { return cudaStreamCreate(s); }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned) {
  if (vt_emu::trace) vt_emu::trace->push_back({VtEmuAsyncOp::Wait, s, e, nullptr, nullptr});
  return cudaSuccess;
}
// CUDA Graphs (core/cuda_graph.h). One capture at a time, of whatever is
// queued on any stream while it is open (the trainers queue everything on
// the compute stream): kernel launches (emu.h's Launcher), async copies and
// memsets, cuBLAS calls become closures over their arguments; a call that
// would make the host wait (a synchronous copy or memset, a device->host
// copy, a stream or event synchronize) invalidates the capture and fails,
// as on a GPU. cudaGraphLaunch runs the closures in order.
namespace vt_emu {
struct Graph {
  std::vector<std::function<void()>> ops;
};
Graph* open_capture = nullptr;
bool capture_invalid = false;
size_t graph_launches = 0;
bool capturing() { return open_capture != nullptr; }
void capture_push(std::function<void()> op) { open_capture->ops.push_back(std::move(op)); }
cudaError_t capture_violation() {
  capture_invalid = true;
  return cudaErrorStreamCaptureImplicit;
}
}  // namespace vt_emu
size_t vt_emu_graph_launches() { return vt_emu::graph_launches; }
cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  if (vt_emu::open_capture) return cudaErrorIllegalState;
  vt_emu::open_capture = new vt_emu::Graph();
  vt_emu::capture_invalid = false;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* g) {
  vt_emu::Graph* c = vt_emu::open_capture;
  vt_emu::open_capture = nullptr;
  *g = nullptr;
  if (!c) return cudaErrorIllegalState;
  if (vt_emu::capture_invalid) {
    delete c;
    return cudaErrorStreamCaptureInvalidated;
  }
  *g = reinterpret_cast<cudaGraph_t>(c);
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t, cudaStreamCaptureStatus* st) {
  *st = vt_emu::open_capture ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long) {
  *e = reinterpret_cast<cudaGraphExec_t>(new vt_emu::Graph(*reinterpret_cast<vt_emu::Graph*>(g)));
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t) {
  if (vt_emu::open_capture) return vt_emu::capture_violation();
  ++vt_emu::graph_launches;
  for (auto& op : reinterpret_cast<vt_emu::Graph*>(e)->ops) op();
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
