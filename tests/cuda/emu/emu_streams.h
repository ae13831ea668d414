// The emulated device's work queue (runtime.cpp), for the emulated kernels
// (emu.h's Launcher) and the library stand-ins (cuBLAS, cuBLASLt, cuDNN,
// nvJPEG, NCCL): every piece of work a GPU would run later is handed to
// submit() with the stream it was queued on.
//
// VT_EMU_STREAMS chooses when that work runs (read once per process):
//  - sync (default): at the call, before it returns (the host never sees
//    work in flight; the emulator of old);
//  - random: on one device thread, concurrently with the host, each stream
//    in its order, the next op taken from a runnable stream chosen at
//    random (VT_EMU_SEED, printed at the first call; random when unset),
//    with random pauses so the host runs ahead by a varying amount;
//  - delayed: on the device thread only while the host waits (a
//    synchronize, a synchronous copy, an event wait), and then only the
//    work that wait needs: everything else stays queued as long as it can.
// In random and delayed mode the ordering between streams is exactly what
// a GPU guarantees (CUDA Runtime API, "Stream synchronization behavior",
// "API synchronization behavior"): events, cudaStreamWaitEvent, the
// synchronize calls, the copies documented as synchronous, graph launches
// as one unit; a copy reads its host source and writes its host
// destination when it runs, not when it was queued (pinned memory; a
// pageable source is taken at the call, as the driver stages it). So a
// missing event wait, a host read before a synchronize, or a host buffer
// reused while its copy is queued gives a wrong result (and, under
// ThreadSanitizer, a report) instead of passing.
//
// Kernels and library calls run one at a time (one device thread; emulated
// kernels keep block state in globals), so streams interleave but never
// overlap inside an op: an ordering bug shows as an order, not a torn op.
#pragma once
#include <cuda_runtime_api.h>

#include <functional>

namespace vt_emu {

enum class StreamMode { Sync, Random, Delayed };
StreamMode stream_mode();

// Queues `op` on `stream` (nullptr and cudaStreamPerThread: the calling
// host thread's per-thread default stream, this build's default), or, while
// a capture is open, records it into the graph; runs it at once in sync
// mode and when called from inside device work (a graph replay).
void submit(cudaStream_t stream, std::function<void()> op);
// Blocks the calling host thread until everything queued so far on
// `stream` has run (what a synchronous library call does before it acts on
// the host).
void drain(cudaStream_t stream);
// True on the device thread while it runs an op (and in sync mode always
// false): a stand-in called back from its own queued op computes at once.
bool in_device();
// Fails the device: every later synchronising call returns
// cudaErrorLaunchFailure (sticky, as a kernel fault on a GPU); `why` is
// printed once.
void device_fault(const char* why);

}  // namespace vt_emu
