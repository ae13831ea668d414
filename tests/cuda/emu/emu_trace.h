// What the emulated runtime (runtime.cpp) lets a test observe of work on
// several streams. Besides running the streams out of order
// (VT_EMU_STREAMS, emu_streams.h), a test can check the order of the calls
// that order streams: while a sink is set, every cudaMemcpyAsync,
// cudaEventRecord and cudaStreamWaitEvent appends one entry.
#pragma once
#include <cstddef>
#include <vector>

struct VtEmuAsyncOp {
  enum Kind { Copy, Record, Wait } kind;
  const void* stream;  // the stream it was queued on (nullptr: the legacy default stream)
  const void* event;   // Record, Wait
  const void* dst;     // Copy
  const void* src;     // Copy
};
void vt_emu_trace_async(std::vector<VtEmuAsyncOp>* sink);  // nullptr: stop tracing
// While held, cudaEventQuery reports every event as not ready (work "still
// running"); cudaEventSynchronize still returns.
void vt_emu_hold_events(bool hold);
size_t vt_emu_malloc_count();  // cudaMalloc calls so far
size_t vt_emu_graph_launches();  // cudaGraphLaunch calls so far (core/cuda_graph.h)
// Host-to-device copies whose source is pageable (not cudaHostAlloc) memory:
// the driver may make the host wait for the stream at each (CUDA Runtime API,
// "API synchronization behavior"), so an input path meant to overlap the
// step stages through pinned memory and keeps this count flat.
size_t vt_emu_pageable_h2d_count();
