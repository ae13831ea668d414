#include "kernels/cuda/groupnorm.h"

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

// partial[row * chunks + k] = sum over chunk k of row `row` of (x - mean)^2
// (centred, pass 2) or of x (mean == nullptr, pass 1). One block per chunk.
template <typename T>
__global__ void chunk_sums_kernel(const T* __restrict__ x, const float* __restrict__ mean, int64_t row_len,
                                  int64_t chunks, float* __restrict__ partial) {
  const int64_t row = blockIdx.x / chunks, k = blockIdx.x % chunks;
  const int64_t begin = k * kGroupNormChunk;
  const int64_t end = begin + kGroupNormChunk < row_len ? begin + kGroupNormChunk : row_len;
  const T* xr = x + row * row_len;
  const float m = mean ? mean[row] : 0.0f;
  float v[1] = {0.0f};
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const float xi = ld(xr, i);
    const float d = xi - m;
    v[0] += mean ? d * d : xi;
  }
  block_sum<1>(v);
  if (threadIdx.x == 0) partial[blockIdx.x] = v[0];
}

// Pass 1's reduction: mean of each row (double sum of its chunks in order),
// kept in double for the fold and as float for pass 2's centring.
__global__ void row_mean_kernel(const float* __restrict__ partial, int64_t rows, int64_t chunks, int64_t row_len,
                                double* __restrict__ mean_d, float* __restrict__ mean_f) {
  VT_GRID_STRIDE(r, rows) {
    double s = 0.0;
    for (int64_t k = 0; k < chunks; ++k) s += partial[r * chunks + k];
    const double m = s / static_cast<double>(row_len);
    mean_d[r] = m;
    mean_f[r] = static_cast<float>(m);
  }
}

// Pass 2's reduction and the fold: for each channel k of row r = (n, g),
// a = rstd * w, shift = b - mean * rstd * w, as kernels/cpu/groupnorm.cpp.
__global__ void fold_kernel(const float* __restrict__ partial, const double* __restrict__ mean_d, int64_t rows,
                            int64_t chunks, int64_t row_len, int64_t groups, int64_t cg, double eps,
                            const float* __restrict__ weight, const float* __restrict__ bias, float* __restrict__ a,
                            float* __restrict__ shift) {
  VT_GRID_STRIDE(r, rows) {
    double s = 0.0;
    for (int64_t k = 0; k < chunks; ++k) s += partial[r * chunks + k];
    const double rstd = 1.0 / sqrt(s / static_cast<double>(row_len) + eps);
    const double mean = mean_d[r];
    const int64_t c0 = (r % groups) * cg;
    for (int64_t k = 0; k < cg; ++k) {
      const double w = weight ? weight[c0 + k] : 1.0, b = bias ? bias[c0 + k] : 0.0;
      a[r * cg + k] = static_cast<float>(rstd * w);  // (n, c) = r * cg + k
      shift[r * cg + k] = static_cast<float>(b - mean * rstd * w);
    }
  }
}

template <typename T>
__global__ void apply_kernel(const T* x, const float* __restrict__ a, const float* __restrict__ shift, T* y,
                             int64_t spatial, int64_t total) {
  VT_GRID_STRIDE(i, total) {
    const int64_t nc = i / spatial;
    st(y, i, ld(x, i) * a[nc] + shift[nc]);  // one rounding for a bf16 y
  }
}

template <typename T>
__global__ void apply_silu_kernel(const T* x, const float* __restrict__ a, const float* __restrict__ shift, T* y,
                                  int64_t spatial, int64_t total) {
  VT_GRID_STRIDE(i, total) {
    const int64_t nc = i / spatial;
    const float v = ld(x, i) * a[nc] + shift[nc];
    st(y, i, v / (1.0f + expf(-v)));  // one rounding for a bf16 y
  }
}

}  // namespace

template <typename T>
void groupnorm_impl(const T* x, const float* weight, const float* bias, T* y, int64_t n, int64_t c, int64_t spatial,
                    int64_t groups, float eps, bool silu, cudaStream_t stream) {
  const char* op = "groupnorm_forward";
  const int64_t total = n * c * spatial;
  if (total == 0) return;
  const int64_t rows = n * groups, cg = c / groups, row_len = cg * spatial;
  const int64_t chunks = (row_len + kGroupNormChunk - 1) / kGroupNormChunk;
  if (rows * chunks > 2147483647) throw std::invalid_argument(std::string(op) + ": too many rows for one launch");
  // partial [rows * chunks] f32, mean_d [rows] f64, mean_f [rows] f32, a and shift [n * c] f32.
  const size_t partial_bytes = static_cast<size_t>(rows * chunks) * sizeof(float);
  const size_t mean_d_off = (partial_bytes + 7) / 8 * 8;
  const size_t mean_f_off = mean_d_off + static_cast<size_t>(rows) * sizeof(double);
  const size_t a_off = mean_f_off + static_cast<size_t>(rows) * sizeof(float);
  const size_t shift_off = a_off + static_cast<size_t>(n * c) * sizeof(float);
  Workspace ws(shift_off + static_cast<size_t>(n * c) * sizeof(float), stream);
  char* base = reinterpret_cast<char*>(ws.f32());
  float* partial = ws.f32();
  double* mean_d = reinterpret_cast<double*>(base + mean_d_off);
  float* mean_f = reinterpret_cast<float*>(base + mean_f_off);
  float* a = reinterpret_cast<float*>(base + a_off);
  float* shift = reinterpret_cast<float*>(base + shift_off);

  const unsigned blocks = static_cast<unsigned>(rows * chunks);
  chunk_sums_kernel<T><<<blocks, kThreads, 0, stream>>>(x, nullptr, row_len, chunks, partial);
  check_launch(op);
  row_mean_kernel<<<grid_1d(rows, 128), 128, 0, stream>>>(partial, rows, chunks, row_len, mean_d, mean_f);
  check_launch(op);
  chunk_sums_kernel<T><<<blocks, kThreads, 0, stream>>>(x, mean_f, row_len, chunks, partial);
  check_launch(op);
  fold_kernel<<<grid_1d(rows, 128), 128, 0, stream>>>(partial, mean_d, rows, chunks, row_len, groups, cg,
                                                      static_cast<double>(eps), weight, bias, a, shift);
  check_launch(op);
  if (silu)
    apply_silu_kernel<T><<<grid_1d(total, kThreads), kThreads, 0, stream>>>(x, a, shift, y, spatial, total);
  else
    apply_kernel<T><<<grid_1d(total, kThreads), kThreads, 0, stream>>>(x, a, shift, y, spatial, total);
  check_launch(op);
}

void groupnorm_forward(const float* x, const float* weight, const float* bias, float* y, int64_t n, int64_t c,
                       int64_t spatial, int64_t groups, float eps, bool silu, cudaStream_t stream) {
  groupnorm_impl(x, weight, bias, y, n, c, spatial, groups, eps, silu, stream);
}

void groupnorm_forward(const void* x, const float* weight, const float* bias, void* y, DType io, int64_t n,
                       int64_t c, int64_t spatial, int64_t groups, float eps, bool silu, cudaStream_t stream) {
  VT_CUDA_DISPATCH_IO("groupnorm_forward", io, T,
                      groupnorm_impl(static_cast<const T*>(x), weight, bias, static_cast<T*>(y), n, c, spatial,
                                     groups, eps, silu, stream));
}

}  // namespace cuda
}  // namespace vt
