#include "train/grad_allreduce_nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "core/dist.h"
#include "core/dist_watchdog.h"

namespace vt {

namespace {

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) throw std::runtime_error(std::string("NCCL ") + what + ": " + ncclGetErrorString(r));
}
void check(cudaError_t r, const char* what) {
  if (r != cudaSuccess) throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(r));
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// After the watchdog has aborted the communicator it ends the job (with
// exit status 4 or 1, bounded by kAbortDeadlineSeconds, core/dist_watchdog.h).
// The caller waits for that instead of throwing: an exception would unwind
// into the trainer, which would end the job itself with exit status 1 and a
// misleading message, racing the watchdog's status and message.
[[noreturn]] void wait_for_the_job_to_end() {
  for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
}

}  // namespace

// The watchdog's view (core/dist_watchdog.h): the bucket all-reduces issued
// while a timeout is set, each with an event recorded on the NCCL stream
// after it, oldest first; one is complete when its event is. A bucket is
// running from the moment mean_range issues it (its event is recorded only
// once ncclAllReduce has returned), so a launch that blocks counts too.
struct NcclGradientAllReduce::Impl : AsyncCollectives {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;   // NCCL's own
  cudaStream_t compute = nullptr;  // where the gradients are written and read
  cudaEvent_t grads_ready = nullptr, reduced = nullptr;
  int device = 0;
  int next_bucket = 0;  // the step's gradient all-reduces issued so far
  // The gradient buffer: the first one reduced (the training loop reduces
  // the gradients first in every step, then the step's device scalars).
  const void* grads_buffer = nullptr;
  struct InFlight {
    int bucket;  // -1: the step's scalars
    size_t count;
    cudaEvent_t done;
    bool recorded;
    std::chrono::steady_clock::time_point issued;
  };
  std::mutex mu;  // guards in_flight and spare (the watchdog thread polls them)
  std::deque<InFlight> in_flight;
  std::vector<cudaEvent_t> spare;
  // Set (before ncclCommAbort) by the watchdog's abort; from then on the
  // communicator is freed or being freed and no NCCL call may use it
  // (nccl.h: ncclCommAbort "frees resources associated with communicator
  // object").
  std::atomic<bool> aborted{false};
  // Held by the caller across the check of `aborted` and the ncclAllReduce
  // call, so the abort never frees the communicator between the two. The
  // abort takes it if it can within kLaunchWait and keeps it for good
  // (every later caller then waits for the job to end); if a launch is
  // blocked inside NCCL (a dead peer), it aborts without it: unblocking
  // that launch is what the abort is for, and the job ends right after.
  std::timed_mutex use_mu;
  static constexpr std::chrono::milliseconds kLaunchWait{200};

  // Drops the completed buckets at the front (mu held).
  void drop_completed() {
    while (!in_flight.empty() && in_flight.front().recorded && cudaEventQuery(in_flight.front().done) == cudaSuccess) {
      spare.push_back(in_flight.front().done);
      in_flight.pop_front();
    }
  }

  bool oldest_running(Running* r) override {
    std::lock_guard<std::mutex> lock(mu);
    if (aborted.load()) return false;
    cudaSetDevice(device);  // the watchdog thread's current device, for the event queries
    drop_completed();
    if (in_flight.empty()) return false;
    const InFlight& f = in_flight.front();
    r->op = f.bucket < 0 ? std::string("NCCL all-reduce of the step's device scalars")
                         : "NCCL all-reduce of gradient bucket " + std::to_string(f.bucket);
    r->count = f.count;
    r->type = "floats";
    r->seconds = seconds_since(f.issued);
    ncclResult_t err = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &err) == ncclSuccess && err != ncclSuccess && err != ncclInProgress)
      r->error = std::string("NCCL asynchronous error: ") + ncclGetErrorString(err);
    return true;
  }

  void abort() override {
    if (aborted.exchange(true)) return;
    // Not released: see use_mu.
    (void)use_mu.try_lock_for(kLaunchWait);
    ncclCommAbort(comm);  // frees the communicator (nccl.h)
  }
};

NcclGradientAllReduce::NcclGradientAllReduce(void* compute_stream) : impl_(std::make_unique<Impl>()) {
  const Dist& d = dist();
  impl_->compute = static_cast<cudaStream_t>(compute_stream);
  ncclUniqueId id{};
  if (d.is_root()) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  d.broadcast(&id, sizeof id, 0);
  // Non-blocking: no implicit ordering with the legacy default stream; the
  // two events below order the streams instead.
  check(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  check(cudaEventCreateWithFlags(&impl_->grads_ready, cudaEventDisableTiming), "cudaEventCreate");
  check(cudaEventCreateWithFlags(&impl_->reduced, cudaEventDisableTiming), "cudaEventCreate");
  check(cudaGetDevice(&impl_->device), "cudaGetDevice");
  check(ncclCommInitRank(&impl_->comm, d.world(), id, d.rank()), "ncclCommInitRank");
  if (d.world() > 1) dist_watch_async(impl_.get());
}

NcclGradientAllReduce::~NcclGradientAllReduce() {
  dist_unwatch_async(impl_.get());
  if (impl_->comm && !impl_->aborted.load()) ncclCommDestroy(impl_->comm);
  for (const auto& f : impl_->in_flight) cudaEventDestroy(f.done);
  for (cudaEvent_t e : impl_->spare) cudaEventDestroy(e);
  if (impl_->grads_ready) cudaEventDestroy(impl_->grads_ready);
  if (impl_->reduced) cudaEventDestroy(impl_->reduced);
  if (impl_->stream) cudaStreamDestroy(impl_->stream);
}

void NcclGradientAllReduce::mean_range(Tensor& grads, int64_t offset, int64_t numel) {
  if (grads.dtype() != DType::F32 || !grads.device().is_cuda() || !grads.is_contiguous())
    throw std::invalid_argument("NcclGradientAllReduce: gradients must be a contiguous fp32 CUDA buffer, got " +
                                std::string(dtype_name(grads.dtype())) + " on " + grads.device().str());
  check_grad_range("NcclGradientAllReduce", grads, offset, numel);
  float* p = static_cast<float*>(grads.raw()) + offset;
  // One event serves every bucket: a wait binds to the event's latest
  // record at the time of the wait call, so re-recording it for the next
  // bucket does not move this one's.
  check(cudaEventRecord(impl_->grads_ready, impl_->compute), "cudaEventRecord");
  check(cudaStreamWaitEvent(impl_->stream, impl_->grads_ready, 0), "cudaStreamWaitEvent");
  Impl& m = *impl_;
  if (!m.grads_buffer) m.grads_buffer = grads.raw();
  const int bucket = grads.raw() == m.grads_buffer ? m.next_bucket++ : -1;
  const bool watched = dist_timeout() > 0 && dist().world() > 1;
  cudaEvent_t done = nullptr;
  if (watched) {
    std::lock_guard<std::mutex> lock(m.mu);
    m.drop_completed();
    if (m.spare.empty()) {
      check(cudaEventCreateWithFlags(&done, cudaEventDisableTiming), "cudaEventCreate");
    } else {
      done = m.spare.back();
      m.spare.pop_back();
    }
    m.in_flight.push_back({bucket, static_cast<size_t>(numel), done, false, std::chrono::steady_clock::now()});
  }
  ncclResult_t r;
  {
    std::unique_lock<std::timed_mutex> use(m.use_mu);
    if (m.aborted.load()) wait_for_the_job_to_end();
    r = ncclAllReduce(p, p, static_cast<size_t>(numel), ncclFloat, ncclAvg, m.comm, m.stream);
  }
  // A launch the abort cut short: its result (an error) is the abort's,
  // not ours to report; the watchdog is ending the job.
  if (m.aborted.load()) wait_for_the_job_to_end();
  if (watched) {
    const cudaError_t rec = r == ncclSuccess ? cudaEventRecord(done, m.stream) : cudaSuccess;
    std::lock_guard<std::mutex> lock(m.mu);
    for (size_t i = 0; i < m.in_flight.size(); ++i) {
      if (m.in_flight[i].done != done) continue;
      if (r == ncclSuccess && rec == cudaSuccess) {
        m.in_flight[i].recorded = true;
      } else {  // not issued: nothing to watch (the error is thrown below)
        m.in_flight.erase(m.in_flight.begin() + static_cast<std::ptrdiff_t>(i));
        m.spare.push_back(done);
      }
      break;
    }
    check(rec, "cudaEventRecord");
  }
  check(r, "ncclAllReduce");
}

void NcclGradientAllReduce::finish() {
  impl_->next_bucket = 0;
  check(cudaEventRecord(impl_->reduced, impl_->stream), "cudaEventRecord");
  check(cudaStreamWaitEvent(impl_->compute, impl_->reduced, 0), "cudaStreamWaitEvent");
}

}  // namespace vt
