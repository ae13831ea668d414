// CUDA-event timing shared by the GPU kernel benchmarks (bench_cuda_kernels,
// bench_mlp_epilogue). CUDA builds only.
#pragma once
#ifdef VT_CUDA
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

namespace vt_bench {

// Exits with the CUDA error's text, prefixed by `what`: a benchmark has
// nothing to recover.
inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

// Median milliseconds of f over `iters` runs after 3 untimed warm-ups, each
// run timed between two events on the default stream. `before_each`, when
// set, runs untimed before every timed run (bench_cuda_kernels: an L2 flush).
inline double median_event_ms(int iters, const std::function<void()>& f,
                              const std::function<void()>& before_each = {}) {
  cudaEvent_t a, b;
  cuda_check(cudaEventCreate(&a), "event");
  cuda_check(cudaEventCreate(&b), "event");
  for (int i = 0; i < 3; ++i) f();
  std::vector<float> ms;
  for (int i = 0; i < iters; ++i) {
    if (before_each) before_each();
    cuda_check(cudaEventRecord(a), "record");
    f();
    cuda_check(cudaEventRecord(b), "record");
    cuda_check(cudaEventSynchronize(b), "sync");
    float t = 0.0f;
    cuda_check(cudaEventElapsedTime(&t, a, b), "elapsed");
    ms.push_back(t);
  }
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace vt_bench
#endif
