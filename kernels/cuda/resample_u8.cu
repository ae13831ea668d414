#include "kernels/cuda/resample_u8.h"

#include <stdexcept>
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

// One thread per output sample (pixel, channel).
__global__ void horizontal_kernel(const uint8_t* __restrict__ in, int64_t in_pitch, int row_offset,
                                  uint8_t* __restrict__ out, int64_t out_pitch, int out_w, int out_h,
                                  const int* __restrict__ bounds, const int* __restrict__ k, int ksize) {
  const int64_t total = static_cast<int64_t>(out_w) * out_h * 3;
  VT_GRID_STRIDE(i, total) {
    const int c = static_cast<int>(i % 3), xx = static_cast<int>((i / 3) % out_w), y = static_cast<int>(i / 3 / out_w);
    const int first = bounds[2 * xx], n = bounds[2 * xx + 1];
    const int* kk = k + static_cast<int64_t>(xx) * ksize;
    const uint8_t* p = in + (y + row_offset) * in_pitch + 3 * first + c;
    int s = 1 << (kPrecisionBits - 1);
    for (int t = 0; t < n; ++t) s += p[3 * t] * kk[t];
    out[y * out_pitch + 3 * xx + c] = clip8(s);
  }
}

__global__ void vertical_kernel(const uint8_t* __restrict__ in, int64_t in_pitch, uint8_t* __restrict__ out,
                                int64_t out_pitch, int out_w, int out_h, const int* __restrict__ bounds,
                                const int* __restrict__ k, int ksize) {
  const int64_t row = static_cast<int64_t>(out_w) * 3, total = row * out_h;
  VT_GRID_STRIDE(i, total) {
    const int64_t x = i % row;
    const int yy = static_cast<int>(i / row);
    const int first = bounds[2 * yy], n = bounds[2 * yy + 1];
    const int* kk = k + static_cast<int64_t>(yy) * ksize;
    const uint8_t* p = in + first * in_pitch + x;
    int s = 1 << (kPrecisionBits - 1);
    for (int t = 0; t < n; ++t) s += p[t * in_pitch] * kk[t];
    out[yy * out_pitch + x] = clip8(s);
  }
}

// bounds then k of one axis in one device block, copied on `stream`.
struct DeviceCoeffs {
  Workspace ws;
  int* bounds;
  int* k;
  DeviceCoeffs(const int* hb, const int* hk, int n_out, int ksize, cudaStream_t stream)
      : ws(sizeof(int) * static_cast<size_t>(n_out) * (2 + ksize), stream) {
    bounds = static_cast<int*>(static_cast<void*>(ws.f32()));
    k = bounds + 2 * static_cast<size_t>(n_out);
    check(cudaMemcpyAsync(bounds, hb, sizeof(int) * 2 * static_cast<size_t>(n_out), cudaMemcpyHostToDevice, stream),
          "cuda::resample_u8_rgb: coefficient upload");
    check(cudaMemcpyAsync(k, hk, sizeof(int) * static_cast<size_t>(n_out) * ksize, cudaMemcpyHostToDevice, stream),
          "cuda::resample_u8_rgb: coefficient upload");
  }
};

void check_args(const char* op, int out_w, int out_h, int ksize) {
  if (out_w <= 0 || out_h <= 0 || ksize <= 0)
    throw std::invalid_argument(std::string(op) + ": output " + std::to_string(out_w) + "x" + std::to_string(out_h) +
                                " and ksize " + std::to_string(ksize) + " must be positive");
}

}  // namespace

void resample_u8_rgb_horizontal(const uint8_t* in, int64_t in_pitch, int row_offset, uint8_t* out, int64_t out_pitch,
                                int out_w, int out_h, const int* bounds, const int* k, int ksize,
                                cudaStream_t stream) {
  const char* op = "cuda::resample_u8_rgb_horizontal";
  check_args(op, out_w, out_h, ksize);
  DeviceCoeffs c(bounds, k, out_w, ksize, stream);
  const int64_t total = static_cast<int64_t>(out_w) * out_h * 3;
  horizontal_kernel<<<grid_1d(total, 256), 256, 0, stream>>>(in, in_pitch, row_offset, out, out_pitch, out_w, out_h,
                                                            c.bounds, c.k, ksize);
  check_launch(op);
}

void resample_u8_rgb_vertical(const uint8_t* in, int64_t in_pitch, uint8_t* out, int64_t out_pitch, int out_w,
                              int out_h, const int* bounds, const int* k, int ksize, cudaStream_t stream) {
  const char* op = "cuda::resample_u8_rgb_vertical";
  check_args(op, out_w, out_h, ksize);
  DeviceCoeffs c(bounds, k, out_h, ksize, stream);
  const int64_t total = static_cast<int64_t>(out_w) * out_h * 3;
  vertical_kernel<<<grid_1d(total, 256), 256, 0, stream>>>(in, in_pitch, out, out_pitch, out_w, out_h, c.bounds,
                                                          c.k, ksize);
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
