#include "kernels/cuda/resample_u8.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <vector>
#include <string>

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS

__device__ __forceinline__ uint8_t clip8(int v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One block row per pass (blockIdx.y), threads striding over its outputs
// (pixel, channel) in Pillow's order of taps.
__global__ void passes_kernel(const ResamplePass* __restrict__ passes, const int* __restrict__ coeffs) {
  const ResamplePass p = passes[blockIdx.y];
  const int n_out = p.vertical ? p.out_h : p.out_w;
  const int* bounds = coeffs + p.coeffs;
  const int* k = bounds + 2 * static_cast<int64_t>(n_out);
  const int64_t row = static_cast<int64_t>(p.out_w) * 3, total = row * p.out_h;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t x = i % row;  // byte within the output row
    const int y = static_cast<int>(i / row);
    int s = 1 << (kPrecisionBits - 1);
    if (p.vertical) {
      const int first = bounds[2 * y], n = bounds[2 * y + 1];
      const int* kk = k + static_cast<int64_t>(y) * p.ksize;
      const uint8_t* q = p.in + first * p.in_pitch + x;
      for (int t = 0; t < n; ++t) s += q[t * p.in_pitch] * kk[t];
    } else {
      const int xx = static_cast<int>(x / 3), c = static_cast<int>(x % 3);
      const int first = bounds[2 * xx], n = bounds[2 * xx + 1];
      const int* kk = k + static_cast<int64_t>(xx) * p.ksize;
      const uint8_t* q = p.in + (y + p.row_offset) * p.in_pitch + 3 * first + c;
      for (int t = 0; t < n; ++t) s += q[3 * t] * kk[t];
    }
    p.out[y * p.out_pitch + x] = clip8(s);
  }
}

void check_args(const char* op, int out_w, int out_h, int ksize) {
  if (out_w <= 0 || out_h <= 0 || ksize <= 0)
    throw std::invalid_argument(std::string(op) + ": output " + std::to_string(out_w) + "x" + std::to_string(out_h) +
                                " and ksize " + std::to_string(ksize) + " must be positive");
}

}  // namespace

void resample_u8_rgb_stages(const std::vector<std::vector<ResamplePass>>& stages, const std::vector<int>& coeffs,
                            cudaStream_t stream, PinnedStaging* staging) {
  const char* op = "cuda::resample_u8_rgb_stages";
  size_t n_passes = 0;
  for (const auto& stage : stages) {
    if (stage.size() > 65535) throw std::invalid_argument(std::string(op) + ": more than 65535 passes in one launch");
    for (const ResamplePass& p : stage) {
      check_args(op, p.out_w, p.out_h, p.ksize);
      const int64_t n_out = p.vertical ? p.out_h : p.out_w;
      if (p.coeffs < 0 || p.coeffs + n_out * (2 + p.ksize) > static_cast<int64_t>(coeffs.size()))
        throw std::invalid_argument(std::string(op) + ": a pass's coefficients lie outside the list");
    }
    n_passes += stage.size();
  }
  if (n_passes == 0) return;
  // All descriptors, then the coefficients (ResamplePass is 8-byte aligned).
  const size_t head = n_passes * sizeof(ResamplePass), bytes = head + coeffs.size() * sizeof(int);
  Workspace ws(bytes, stream);
  char* base = static_cast<char*>(static_cast<void*>(ws.f32()));
  std::vector<char> pageable;
  char* host = staging ? static_cast<char*>(staging->acquire(bytes)) : (pageable.resize(bytes), pageable.data());
  size_t at = 0;
  for (const auto& stage : stages) {
    std::memcpy(host + at, stage.data(), stage.size() * sizeof(ResamplePass));
    at += stage.size() * sizeof(ResamplePass);
  }
  std::memcpy(host + head, coeffs.data(), coeffs.size() * sizeof(int));
  check(cudaMemcpyAsync(base, host, bytes, cudaMemcpyHostToDevice, stream), "cuda::resample_u8_rgb_stages: upload");
  if (staging) staging->queued(stream);
  const int* k = reinterpret_cast<const int*>(base + head);
  const ResamplePass* descs = reinterpret_cast<const ResamplePass*>(base);
  for (const auto& stage : stages) {
    if (stage.empty()) continue;
    int64_t largest = 0;
    for (const ResamplePass& p : stage) largest = std::max<int64_t>(largest, static_cast<int64_t>(p.out_w) * p.out_h * 3);
    // Enough blocks per pass to cover the largest at 8 outputs a thread.
    const unsigned bx = static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>((largest + 2047) / 2048, 1024)));
    passes_kernel<<<dim3(bx, static_cast<unsigned>(stage.size())), 256, 0, stream>>>(descs, k);
    check_launch(op);
    descs += stage.size();
  }
}

}  // namespace cuda
}  // namespace vt
