// A CUDA Graph of work queued on the compute stream (the op library's
// stream, CudaStreamHandle nullptr; core/cuda_stream.h): capture once,
// replay many times with one launch (CUDA Programming Guide, "CUDA Graphs";
// the shape of torch.cuda.CUDAGraph). A replay runs the captured kernels with
// the captured arguments on the captured addresses: whatever changes from one
// replay to the next must be written into device memory the graph reads
// before the launch (train/step_graph.h says what the training step keeps
// there).
//
// Memory: the capture allocates from a private pool of the caching allocator
// (core/allocator.h, cuda_capture_pool_begin), held until reset() or the
// destructor, so no other work is ever handed a block the graph uses.
//
// Errors: capture() returns false with the runtime's reason when the capture
// fails (the runtime refuses to capture the stream, or the work made a call a
// capture may not contain: a synchronous copy, a device->host read, a host
// wait) or `work` throws; the work queued meanwhile did not run, the graph is
// empty and the sticky error is cleared. launch() throws std::runtime_error
// naming the call. Builds without CUDA: capture() returns false.
#pragma once
#include <cstdint>
#include <functional>
#include <string>

#include "core/allocator.h"

namespace vt {

class CudaGraph {
 public:
  CudaGraph() = default;
  ~CudaGraph();
  CudaGraph(const CudaGraph&) = delete;
  CudaGraph& operator=(const CudaGraph&) = delete;

  // Captures the compute-stream work `work` queues and instantiates it.
  // Nothing runs: launch() runs it (the first time too).
  bool capture(const std::function<void()>& work, std::string* why_not);
  void launch();
  bool ready() const { return exec_ != nullptr; }
  void reset();  // destroys the graph and gives its memory pool back

 private:
  void* graph_ = nullptr;  // cudaGraph_t
  void* exec_ = nullptr;   // cudaGraphExec_t
  CudaStreamHandle pool_ = nullptr;
};

// cudaGraphLaunch calls made by CudaGraph::launch so far, in this process.
int64_t cuda_graph_launches();

// Whether the compute stream is being captured now (CudaGraph::capture):
// ops skip their host-side checks of device data then, which a capture
// cannot contain (a replay runs no host code at all). False without CUDA.
bool cuda_capturing();

}  // namespace vt
