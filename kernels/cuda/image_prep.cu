#include "kernels/cuda/image_prep.h"

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

struct ChannelConsts {
  float a[kMaxImageChannels], b[kMaxImageChannels];
};

template <typename T>
__global__ void normalize_kernel(const uint8_t* __restrict__ in, ChannelConsts k, T* __restrict__ out, int64_t H,
                                 int64_t W, int64_t C, int64_t total) {
  VT_GRID_STRIDE(i, total) {
    const int64_t x = i % W, y = (i / W) % H, c = (i / (W * H)) % C, n = i / (W * H * C);
    const float v = static_cast<float>(in[((n * H + y) * W + x) * C + c]);
#ifdef __CUDA_ARCH__
    const float r = __fadd_rn(__fmul_rn(v, k.a[c]), k.b[c]);  // no contraction into an FMA
#else
    const float r = v * k.a[c] + k.b[c];
#endif
    st(out, i, r);
  }
}

}  // namespace

void normalize_u8_hwc(const uint8_t* in, const float* a, const float* b, void* out, int64_t B, int64_t H, int64_t W,
                      int64_t C, DType io, cudaStream_t stream) {
  const char* op = "cuda::normalize_u8_hwc";
  if (C < 1 || C > kMaxImageChannels)
    throw std::invalid_argument(std::string(op) + ": " + std::to_string(C) + " channels (1 to 4 supported)");
  const int64_t total = B * C * H * W;
  if (total == 0) return;
  ChannelConsts k{};
  for (int64_t c = 0; c < C; ++c) k.a[c] = a[c], k.b[c] = b[c];
  VT_CUDA_DISPATCH_IO(op, io, T,
                      normalize_kernel<T><<<grid_1d(total, 256), 256, 0, stream>>>(in, k, static_cast<T*>(out), H, W,
                                                                                  C, total));
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
