// Host emulation of the CUDA execution model, so that the CUDA tests can
// check the kernels' logic (index math, reductions, aliasing, argument
// plumbing) on a machine without a GPU (target test_cuda_emu, ctest -L emu).
// Force-included into the kernels/cuda/*.cu sources after transform.py
// rewrote their launches and dynamic shared memory.
//  - Blocks run one after another; the threads of a block are cooperative
//    fibers (ucontext), switched at every __syncthreads, so a thread never
//    passes a barrier before all others reached it. Between two barriers
//    the threads run in index order, or in reverse with the environment
//    variable VT_EMU_THREAD_ORDER=reverse: a kernel whose result depends on
//    that order has a race (a thread reading what another writes without a
//    barrier between), which one of the two orders shows.
//  - __shared__ variables are function statics (one block at a time), the
//    dynamic shared array is vt_emu_smem, poisoned with NaN before each block
//    so reading an entry no thread wrote shows up as a NaN result.
//  - __shfl_xor_sync goes through a block-wide buffer between two barriers:
//    exact when every live thread of the block calls it (block_sum; the
//    warp-per-row softmax, whose exited warps count as arrived).
// Not emulated: memory-model races between threads without a barrier,
// launch limits (checked by the host code itself), device math ulps.
#pragma once
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <math.h>
#include <vector>
#include <algorithm>
#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __forceinline__
#define __forceinline__ inline
#undef __shared__
#define __shared__ static

extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim, gridDim;
extern float vt_emu_smem[1 << 16];
extern float vt_emu_xbuf[1024];

#include <ucontext.h>
#include <functional>
#include "emu_streams.h"
#include <stdexcept>
namespace vt_emu {
// Stream capture (cudaStreamBeginCapture, runtime.cpp): while the calling
// thread has a capture open, submit() records work as a closure instead of
// queueing it; cudaGraphLaunch replays them. The stand-ins use these too.
bool capturing();
void capture_push(std::function<void()> op);
// Cooperative fibers: one per CUDA thread of the current block; a barrier
// switches back to the scheduler, which resumes the next fiber.
struct Fibers {
  std::vector<ucontext_t> ctx;
  std::vector<std::vector<char>> stacks;
  std::vector<int> state;  // 0 runnable, 1 at barrier, 2 done
  ucontext_t sched;
  unsigned cur = 0, n = 0;
  std::function<void()> body;
};
extern Fibers fib;
void fiber_entry();
void barrier_wait();
bool reverse_thread_order();  // VT_EMU_THREAD_ORDER=reverse (read once)

// A launch checks its configuration at the call (as cudaLaunchKernel
// reports a bad one at once) and queues the grid on its stream
// (emu_streams.h): the kernel runs later, reading its buffers then, with the
// argument values of the call.
struct Launcher {
  dim3 g, b;
  size_t smem;
  cudaStream_t stream;
  Launcher(dim3 g_, dim3 b_, size_t smem_ = 0, cudaStream_t s = 0) : g(g_), b(b_), smem(smem_), stream(s) {}
  template <class F, class... A>
  void operator()(F f, A... args) {
    if (smem > sizeof(vt_emu_smem)) throw std::runtime_error("emu: smem too large");
    if (b.y != 1 || b.z != 1 || b.x > 1024 || b.x % 32) throw std::runtime_error("emu: bad block");
    const dim3 g0 = g, b0 = b;
    const size_t s0 = smem;
    submit(stream, [=] { Launcher(g0, b0, s0).run(f, args...); });
  }
  // Runs every block of the grid, now, on the calling (device) thread.
  template <class F, class... A>
  void run(F f, A... args) {
    gridDim = g;
    blockDim = b;
    fib.n = b.x;
    fib.body = [&] { f(args...); };
    if (fib.ctx.size() < b.x) {
      fib.ctx.resize(b.x);
      fib.stacks.resize(b.x);
    }
    fib.state.assign(b.x, 0);
    for (unsigned z = 0; z < g.z; ++z)
      for (unsigned y = 0; y < g.y; ++y)
        for (unsigned x = 0; x < g.x; ++x) {
          blockIdx = make_uint3(x, y, z);
          std::fill(vt_emu_smem, vt_emu_smem + (1 << 16), __builtin_nanf(""));
          for (unsigned t = 0; t < b.x; ++t) {
            fib.stacks[t].resize(1 << 16);
            getcontext(&fib.ctx[t]);
            fib.ctx[t].uc_stack.ss_sp = fib.stacks[t].data();
            fib.ctx[t].uc_stack.ss_size = fib.stacks[t].size();
            fib.ctx[t].uc_link = &fib.sched;
            makecontext(&fib.ctx[t], fiber_entry, 0);
            fib.state[t] = 0;
          }
          const bool reverse = reverse_thread_order();
          for (;;) {
            unsigned done = 0, at_barrier = 0;
            for (unsigned i = 0; i < b.x; ++i) {
              const unsigned t = reverse ? b.x - 1 - i : i;
              if (fib.state[t] == 2) continue;
              fib.cur = t;
              threadIdx = make_uint3(t, 0, 0);
              fib.state[t] = 0;
              swapcontext(&fib.sched, &fib.ctx[t]);
            }
            for (unsigned t = 0; t < b.x; ++t) done += fib.state[t] == 2, at_barrier += fib.state[t] == 1;
            if (done == b.x) break;
            (void)at_barrier;  // exited threads count as arrived (warp-level early exits)
          }
        }
  }
};
}  // namespace vt_emu

inline void __syncthreads() { vt_emu::barrier_wait(); }
template <class V>
inline V __shfl_xor_sync(unsigned, V v, int off) {
  static_assert(sizeof(V) == 4, "float shuffles only");
  const unsigned t = threadIdx.x;
  vt_emu_xbuf[t] = v;
  __syncthreads();
  V r = vt_emu_xbuf[t ^ static_cast<unsigned>(off)];
  __syncthreads();
  return r;
}
inline int64_t min(int64_t a, int64_t b) { return a < b ? a : b; }
