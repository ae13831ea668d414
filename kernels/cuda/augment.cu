#include "kernels/cuda/augment.h"

#include <cstring>

#include "core/pinned_staging.h"
#include "kernels/augment_math.h"
#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;
namespace am = augment_math;

constexpr int kStatThreads = 256;  // one thread per histogram bin
constexpr int kTile = 1024;

// Block b: sample b / 4, part b % 4 (bands 0..2: histogram and lut of
// AutoContrast / Equalize; 3: the gray sum of Contrast). A block whose
// sample does not need its part returns at once (the whole block).
__global__ void augment_stats_kernel(const uint8_t* __restrict__ in, const AugmentStepArgs* __restrict__ args,
                                     int64_t HW, uint8_t* __restrict__ luts, uint64_t* __restrict__ sums) {
  __shared__ uint8_t tile[kTile];
  __shared__ int32_t hist[256];
  __shared__ unsigned long long part[kStatThreads];
  const int64_t n = blockIdx.x / 4;
  const int band = static_cast<int>(blockIdx.x % 4);
  const int t = static_cast<int>(threadIdx.x);
  const int kind = args[n].kind;
  const uint8_t* img = in + n * HW * 3;
  if (band < 3) {
    if (!am::needs_histograms(kind)) return;
    int32_t count = 0;  // pixels of value t in this band
    for (int64_t base = 0; base < HW; base += kTile) {
      const int lim = static_cast<int>(HW - base < kTile ? HW - base : kTile);
      for (int i = t; i < lim; i += kStatThreads) tile[i] = img[(base + i) * 3 + band];
      __syncthreads();
      for (int i = 0; i < lim; ++i) count += tile[i] == t;
      __syncthreads();
    }
    hist[t] = count;
    __syncthreads();
    if (t == 0) {
      uint8_t* lut = luts + (n * 3 + band) * 256;
      if (kind == kAugAutoContrast) am::autocontrast_lut(hist, lut);
      else am::equalize_lut(hist, lut);
    }
    return;
  }
  if (kind != kAugContrast) return;
  unsigned long long s = 0;
  for (int64_t i = t; i < HW; i += kStatThreads) s += am::gray(img[3 * i], img[3 * i + 1], img[3 * i + 2]);
  part[t] = s;
  __syncthreads();
  for (int w = kStatThreads / 2; w > 0; w >>= 1) {
    if (t < w) part[t] += part[t + w];
    __syncthreads();
  }
  if (t == 0) sums[n] = part[0];
}

__global__ void augment_step_kernel(const uint8_t* __restrict__ in, const AugmentStepArgs* __restrict__ args,
                                    uint8_t* __restrict__ out, int H, int W, int64_t total,
                                    const uint8_t* __restrict__ luts, const uint64_t* __restrict__ sums) {
  VT_GRID_STRIDE(i, total) {
    const int64_t HW = static_cast<int64_t>(H) * W;
    const int64_t n = i / HW, p = i % HW;
    const int y = static_cast<int>(p / W), x = static_cast<int>(p % W);
    const AugmentStepArgs a = args[n];
    const int mean = a.kind == kAugContrast ? am::contrast_mean(sums[n], H, W) : 0;
    am::step_pixel(in + n * HW * 3, H, W, y, x, a, luts + n * 3 * 256, mean, out + i * 3);
  }
}

__global__ void augment_erase_kernel(float* __restrict__ out, const AugmentEraseArgs* __restrict__ args, int H, int W,
                                     int64_t total) {
  VT_GRID_STRIDE(i, total) {
    const int x = static_cast<int>(i % W), y = static_cast<int>((i / W) % H);
    const int c = static_cast<int>((i / (static_cast<int64_t>(W) * H)) % 3);
    const int64_t n = i / (static_cast<int64_t>(W) * H * 3);
    const AugmentEraseArgs e = args[n];
    if (y < e.top || y >= e.top + e.height || x < e.left || x >= e.left + e.width) continue;
    const uint64_t k = (static_cast<uint64_t>(c) * e.height + (y - e.top)) * e.width + (x - e.left);
    out[i] = am::erase_value(e, k);
  }
}

// The per-sample arguments go up through page-locked memory: a copy from
// pageable memory may make the host wait for the stream (CUDA Runtime API,
// "API synchronization behavior"), which would stall the loader thread that
// queues the augmentation behind the step in flight. One staging per
// launching thread (it is not thread-safe), on the device current when the
// thread first launches (a thread drives one device).
int current_device() {
  int d = 0;
  check(cudaGetDevice(&d), "cudaGetDevice");
  return d;
}
void upload_args(void* dst, const void* host, size_t bytes, cudaStream_t stream, const char* op) {
  thread_local PinnedStaging staging(current_device());
  void* pinned = staging.acquire(bytes);
  std::memcpy(pinned, host, bytes);
  check(cudaMemcpyAsync(dst, pinned, bytes, cudaMemcpyHostToDevice, stream), op);
  staging.queued(stream);
}

}  // namespace

void augment_step(const uint8_t* in, const AugmentStepArgs* host_args, AugmentStepArgs* args, uint8_t* out,
                  int64_t N, int H, int W, uint8_t* luts, uint64_t* sums, cudaStream_t stream) {
  const char* op = "cuda::augment_step";
  const int64_t total = N * H * W;
  if (total == 0) return;
  if (N * 4 > 2147483647) throw std::invalid_argument(std::string(op) + ": batch too large");
  upload_args(args, host_args, static_cast<size_t>(N) * sizeof(AugmentStepArgs), stream, op);
  augment_stats_kernel<<<static_cast<unsigned>(N * 4), kStatThreads, 0, stream>>>(in, args, static_cast<int64_t>(H) * W,
                                                                                  luts, sums);
  check_launch(op);
  augment_step_kernel<<<grid_1d(total, 256), 256, 0, stream>>>(in, args, out, H, W, total, luts, sums);
  check_launch(op);
}

void augment_erase(float* out, const AugmentEraseArgs* host_args, AugmentEraseArgs* args, int64_t N, int H, int W,
                   cudaStream_t stream) {
  const char* op = "cuda::augment_erase";
  const int64_t total = N * 3 * H * W;
  if (total == 0) return;
  upload_args(args, host_args, static_cast<size_t>(N) * sizeof(AugmentEraseArgs), stream, op);
  augment_erase_kernel<<<grid_1d(total, 256), 256, 0, stream>>>(out, args, H, W, total);
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
