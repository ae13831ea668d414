#include "core/cuda_graph.h"

#include <atomic>
#include <stdexcept>

#ifdef VT_CUDA
#include <cuda_runtime.h>
#endif

namespace vt {

namespace {
std::atomic<int64_t> g_launches{0};
}

int64_t cuda_graph_launches() { return g_launches.load(); }

CudaGraph::~CudaGraph() { reset(); }

#ifdef VT_CUDA

bool CudaGraph::capture(const std::function<void()>& work, std::string* why_not) {
  reset();
  auto fail = [&](const std::string& why) {
    cudaGetLastError();  // the capture's error is not the next call's
    cuda_capture_pool_end();
    cuda_capture_pool_release(pool_);
    pool_ = nullptr;
    if (why_not) *why_not = why;
    return false;
  };
  const cudaStream_t s = nullptr;  // the compute stream
  pool_ = cuda_capture_pool_begin();
  // Relaxed: the pool's first cudaMalloc calls happen inside the capture.
  cudaError_t e = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) return fail(std::string("cudaStreamBeginCapture on the compute stream: ") + cudaGetErrorString(e));
  std::string thrown;
  try {
    work();
  } catch (const std::exception& x) {
    thrown = x.what();
  }
  cudaGraph_t g = nullptr;
  e = cudaStreamEndCapture(s, &g);
  if (!thrown.empty() || e != cudaSuccess) {
    if (g) cudaGraphDestroy(g);
    return fail(!thrown.empty() ? "the captured work failed: " + thrown
                                : std::string("cudaStreamEndCapture: ") + cudaGetErrorString(e));
  }
  cuda_capture_pool_end();
  cudaGraphExec_t x = nullptr;
  e = cudaGraphInstantiate(&x, g, 0);
  graph_ = g;
  if (e != cudaSuccess) {
    cudaGetLastError();
    reset();
    if (why_not) *why_not = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(e);
    return false;
  }
  exec_ = x;
  return true;
}

bool cuda_capturing() {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(nullptr, &st) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return st != cudaStreamCaptureStatusNone;
}

void CudaGraph::launch() {
  if (!exec_) throw std::logic_error("CudaGraph::launch: nothing captured");
  const cudaError_t e = cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), nullptr);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error(std::string("cudaGraphLaunch: ") + cudaGetErrorString(e));
  }
  ++g_launches;
}

void CudaGraph::reset() {
  if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
  if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
  exec_ = graph_ = nullptr;
  // Replays queued before this point still use the pool's blocks: later
  // users of them run after those on the same (compute) stream.
  cuda_capture_pool_release(pool_);
  pool_ = nullptr;
}

#else

bool CudaGraph::capture(const std::function<void()>&, std::string* why_not) {
  if (why_not) *why_not = "this build has no CUDA support";
  return false;
}
void CudaGraph::launch() { throw std::logic_error("CudaGraph::launch: this build has no CUDA support"); }
bool cuda_capturing() { return false; }
void CudaGraph::reset() {}

#endif

}  // namespace vt
