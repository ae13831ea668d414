#include "core/cuda_stream.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#ifdef VT_CUDA
#include <cuda_runtime.h>
#endif

namespace vt {

Tensor cuda_empty_on(const Shape& shape, DType dtype, int device, CudaStreamHandle stream) {
  const Tensor probe = Tensor::wrap(nullptr, shape, dtype, Device::cuda(device));  // checks the shape
  void* p = cuda_alloc(std::max<size_t>(probe.nbytes(), 1), device, stream);
  std::shared_ptr<void> owner(p, [device](void* q) { cuda_free(q, device); });
  return Tensor::wrap(p, shape, dtype, Device::cuda(device), std::move(owner));
}

#ifdef VT_CUDA
namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  cudaGetLastError();
  throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(e));
}

// Runs `f` with `device` current, restoring the caller's device.
template <typename F>
void on_device(int device, F f) {
  int prev = 0;
  check(cudaGetDevice(&prev), "cudaGetDevice");
  if (prev != device) check(cudaSetDevice(device), "cudaSetDevice");
  try {
    f();
  } catch (...) {
    if (prev != device) cudaSetDevice(prev);
    throw;
  }
  if (prev != device) cudaSetDevice(prev);
}

}  // namespace

CudaStream CudaStream::create(int device) {
  CudaStream s;
  s.device_ = device;
  on_device(device, [&] {
    cudaStream_t st = nullptr;
    check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    s.stream_ = st;
  });
  return s;
}

CudaStream::~CudaStream() {
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

void CudaStream::synchronize() const {
  if (stream_) check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "cudaStreamSynchronize");
}

CudaEvent CudaEvent::create(int device) {
  CudaEvent e;
  on_device(device, [&] {
    cudaEvent_t ev = nullptr;
    check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    e.event_ = ev;
  });
  return e;
}

CudaEvent CudaEvent::create_timing(int device) {
  CudaEvent e;
  on_device(device, [&] {
    cudaEvent_t ev = nullptr;
    check(cudaEventCreateWithFlags(&ev, cudaEventDefault), "cudaEventCreateWithFlags");
    e.event_ = ev;
  });
  return e;
}

float elapsed_ms(const CudaEvent& start, const CudaEvent& end) {
  if (!start.defined() || !end.defined()) throw std::logic_error("elapsed_ms: an event not made by CudaEvent::create_timing");
  end.synchronize();
  float ms = 0;
  check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start.handle()), static_cast<cudaEvent_t>(end.handle())),
        "cudaEventElapsedTime");
  return ms;
}

CudaEvent::~CudaEvent() {
  if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

void CudaEvent::record(CudaStreamHandle stream) {
  if (!event_) throw std::logic_error("CudaEvent::record: no event (made by CudaEvent::create)");
  check(cudaEventRecord(static_cast<cudaEvent_t>(event_), static_cast<cudaStream_t>(stream)), "cudaEventRecord");
}

void CudaEvent::wait_on(CudaStreamHandle stream) const {
  if (!event_) return;
  check(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event_), 0),
        "cudaStreamWaitEvent");
}

bool CudaEvent::query() const {
  if (!event_) return true;
  const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event_));
  if (e == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  check(e, "cudaEventQuery");
  return true;
}

void CudaEvent::synchronize() const {
  if (!event_) return;
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(event_)), "cudaEventSynchronize");
}

void copy_async(const Tensor& dst, const Tensor& src, CudaStreamHandle stream) {
  if (dst.shape() != src.shape() || dst.dtype() != src.dtype() || !dst.is_contiguous() || !src.is_contiguous())
    throw std::invalid_argument("copy_async: " + src.str() + " into " + dst.str() +
                                ": needs the same shape and dtype, both contiguous");
  const bool d = dst.device().is_cuda(), s = src.device().is_cuda();
  if (!d && !s) throw std::invalid_argument("copy_async: " + src.str() + " into " + dst.str() + ": no CUDA side");
  const cudaMemcpyKind kind = d && s ? cudaMemcpyDeviceToDevice : d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
  if (dst.nbytes() == 0) return;
  check(cudaMemcpyAsync(dst.raw(), src.raw(), dst.nbytes(), kind, static_cast<cudaStream_t>(stream)),
        "cudaMemcpyAsync");
}

#else

namespace {
[[noreturn]] void no_cuda() { throw std::runtime_error("this build has no CUDA support (configure with -DVT_CUDA=ON)"); }
}  // namespace

CudaStream CudaStream::create(int) { no_cuda(); }
CudaStream::~CudaStream() = default;
void CudaStream::synchronize() const {}
CudaEvent CudaEvent::create(int) { no_cuda(); }
CudaEvent CudaEvent::create_timing(int) { no_cuda(); }
float elapsed_ms(const CudaEvent&, const CudaEvent&) { no_cuda(); }
CudaEvent::~CudaEvent() = default;
void CudaEvent::record(CudaStreamHandle) { no_cuda(); }
void CudaEvent::wait_on(CudaStreamHandle) const { no_cuda(); }
bool CudaEvent::query() const { return true; }
void CudaEvent::synchronize() const {}
void copy_async(const Tensor&, const Tensor&, CudaStreamHandle) { no_cuda(); }

#endif

CudaStream::CudaStream(CudaStream&& o) noexcept
    : stream_(std::exchange(o.stream_, nullptr)), device_(o.device_) {}
CudaStream& CudaStream::operator=(CudaStream&& o) noexcept {
  if (this != &o) {
    CudaStream old(std::move(*this));  // destroyed at the end of this scope
    stream_ = std::exchange(o.stream_, nullptr);
    device_ = o.device_;
  }
  return *this;
}
CudaEvent::CudaEvent(CudaEvent&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
CudaEvent& CudaEvent::operator=(CudaEvent&& o) noexcept {
  if (this != &o) {
    CudaEvent old(std::move(*this));
    event_ = std::exchange(o.event_, nullptr);
  }
  return *this;
}

}  // namespace vt
