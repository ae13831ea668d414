#include "kernels/cuda/diffusion.h"

#include "core/philox_block.h"
#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;
constexpr int kLossThreads = 256;  // one block per sample; a power of two (tree reduction)

// The schedule row of sample b, or nullptr when its index is outside [0, K).
__device__ __forceinline__ const double* row_of(const double* sched, int64_t K, const int32_t* t, int64_t b) {
  const int32_t ti = t[b];
  return (ti >= 0 && ti < K) ? sched + static_cast<int64_t>(ti) * kDiffusionCoefs : nullptr;
}

__device__ __forceinline__ float nan_f() { return NAN; }

__global__ void noise_kernel(float* __restrict__ out, int64_t B, int64_t N, uint64_t seed, uint64_t purpose,
                             uint64_t key, bool row_last, int64_t offset, int64_t stride) {
  VT_GRID_STRIDE(k, B * N) {
    const int64_t r = k / N, i = k - r * N;
    const uint64_t g = static_cast<uint64_t>(offset + r * stride);
    const uint64_t s = row_last ? philox_stream_mix(purpose, key, g) : philox_stream_mix(purpose, g, key);
    out[k] = static_cast<float>(philox_normal(seed, s, static_cast<uint64_t>(i)));
  }
}

__global__ void q_sample_kernel(const double* __restrict__ sched, int64_t K, const int32_t* __restrict__ t,
                                const float* __restrict__ x0, const float* __restrict__ noise, float* __restrict__ out,
                                int64_t B, int64_t N) {
  VT_GRID_STRIDE(k, B * N) {
    const double* c = row_of(sched, K, t, k / N);
    out[k] = c ? dmath::q_sample(c, x0[k], noise[k]) : nan_f();
  }
}

// One block per sample: each thread walks a strided share of the N elements,
// then the float64 partial sums meet in a shared-memory tree.
template <typename T>
__global__ void losses_kernel(const double* __restrict__ sched, int64_t K, const int32_t* __restrict__ t,
                              const T* __restrict__ model_out, const float* __restrict__ x0,
                              const float* __restrict__ x_t, const float* __restrict__ noise, int t0_term,
                              double* __restrict__ stats, T* grad, int64_t B, int64_t N) {
  __shared__ double part[2][kLossThreads];
  const int64_t b = blockIdx.x;
  const double* c = row_of(sched, K, t, b);
  const bool at0 = t[b] == 0;
  const T* eh = model_out + b * 2 * N;
  const T* v = eh + N;
  double mse = 0, vb = 0;
  for (int64_t i = threadIdx.x; i < N; i += blockDim.x) {
    if (!c) {
      if (grad) st(grad + b * 2 * N, i, nan_f()), st(grad + b * 2 * N, N + i, nan_f());
      continue;
    }
    const dmath::LossElem e = dmath::loss_elem(c, at0, static_cast<DiffusionT0>(t0_term), x0[b * N + i],
                                               x_t[b * N + i], noise[b * N + i], ld(eh, i), ld(v, i), N, B);
    mse += e.sq;
    vb += e.vb;
    if (grad) {
      st(grad + b * 2 * N, i, static_cast<float>(e.g_eps));
      st(grad + b * 2 * N, N + i, static_cast<float>(e.g_v));
    }
  }
  part[0][threadIdx.x] = mse;
  part[1][threadIdx.x] = vb;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h >>= 1) {
    if (static_cast<int>(threadIdx.x) < h) {
      part[0][threadIdx.x] += part[0][threadIdx.x + h];
      part[1][threadIdx.x] += part[1][threadIdx.x + h];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const double nan = static_cast<double>(NAN);
    stats[2 * b] = c ? part[0][0] / N : nan;
    stats[2 * b + 1] = c ? part[1][0] / N / dmath::kLn2 : nan;
  }
}

template <typename T>
__global__ void p_mean_variance_kernel(const double* __restrict__ sched, int64_t K, const int32_t* __restrict__ t,
                                       const T* __restrict__ model_out, const float* __restrict__ x, bool clip,
                                       float* mean, float* log_variance, float* x0_hat, int64_t B, int64_t N) {
  VT_GRID_STRIDE(k, B * N) {
    const int64_t b = k / N, i = k - b * N;
    const double* c = row_of(sched, K, t, b);
    const T* eh = model_out + b * 2 * N;
    if (!c) {
      if (x0_hat) x0_hat[k] = nan_f();
      if (mean) mean[k] = nan_f();
      if (log_variance) log_variance[k] = nan_f();
      continue;
    }
    const double xv = x[k];
    const double x0 = dmath::pred_x0(c, xv, ld(eh, i), clip);
    if (x0_hat) x0_hat[k] = static_cast<float>(x0);
    if (mean) mean[k] = static_cast<float>(c[kDcCoef1] * x0 + c[kDcCoef2] * xv);
    if (log_variance) log_variance[k] = static_cast<float>(dmath::model_log_variance(c, ld(eh + N, i)));
  }
}

template <typename T>
__global__ void ddpm_kernel(const double* __restrict__ sched, int64_t K, const int32_t* __restrict__ t,
                            const T* __restrict__ model_out, const float* __restrict__ x,
                            const float* __restrict__ noise, float* out, bool clip, int64_t B, int64_t N) {
  VT_GRID_STRIDE(k, B * N) {
    const int64_t b = k / N, i = k - b * N;
    const double* c = row_of(sched, K, t, b);
    const T* eh = model_out + b * 2 * N;
    out[k] = c ? dmath::ddpm_elem(c, t[b] == 0, x[k], ld(eh, i), ld(eh + N, i), noise[k], clip) : nan_f();
  }
}

template <typename T>
__global__ void ddim_kernel(const double* __restrict__ sched, int64_t K, const int32_t* __restrict__ t,
                            const T* __restrict__ model_out, const float* __restrict__ x, double eta,
                            const float* noise, float* out, bool clip, int64_t B, int64_t N) {
  VT_GRID_STRIDE(k, B * N) {
    const int64_t b = k / N, i = k - b * N;
    const double* c = row_of(sched, K, t, b);
    if (!c) {
      out[k] = nan_f();
      continue;
    }
    const dmath::DdimScalars s = dmath::ddim_scalars(c, eta);
    out[k] = dmath::ddim_elem(c, s, t[b] == 0, x[k], ld(model_out + b * 2 * N, i), noise ? noise[k] : 0.0f,
                              noise != nullptr, clip);
  }
}

template <typename T>
__global__ void cfg_kernel(const T* __restrict__ model_out, double scale, int64_t guided, T* out, int64_t B,
                           int64_t C2, int64_t S) {
  const T* unc = model_out + B * C2 * S;
  VT_GRID_STRIDE(k, B * C2 * S) {
    const int64_t ch = (k / S) % C2;
    st(out, k, ch < guided ? dmath::cfg_elem(ld(model_out, k), ld(unc, k), scale) : ld(model_out, k));
  }
}

__global__ void loss_means_kernel(const double* __restrict__ stats, int64_t B, float* __restrict__ out) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double l, m, v;
  dmath::loss_means(stats, B, &l, &m, &v);
  out[0] = static_cast<float>(l), out[1] = static_cast<float>(m), out[2] = static_cast<float>(v);
}

}  // namespace

void gaussian_noise(float* out, int64_t B, int64_t N, uint64_t seed, uint64_t purpose, uint64_t key, bool row_last,
                    int64_t offset, int64_t stride, cudaStream_t stream) {
  if (B * N == 0) return;
  noise_kernel<<<grid_1d(B * N, kThreads), kThreads, 0, stream>>>(out, B, N, seed, purpose, key, row_last, offset,
                                                                 stride);
  check_launch("cuda::gaussian_noise");
}

void diffusion_q_sample(const double* sched, int64_t K, const int32_t* t, const float* x0, const float* noise,
                        float* out, int64_t B, int64_t N, cudaStream_t stream) {
  if (B * N == 0) return;
  q_sample_kernel<<<grid_1d(B * N, kThreads), kThreads, 0, stream>>>(sched, K, t, x0, noise, out, B, N);
  check_launch("cuda::diffusion_q_sample");
}

void diffusion_training_losses(const double* sched, int64_t K, const int32_t* t, const void* model_out,
                               const float* x0, const float* x_t, const float* noise, DiffusionT0 t0, double* stats,
                               void* grad, int64_t B, int64_t N, DType io, cudaStream_t stream) {
  if (B == 0) return;
  const char* op = "cuda::diffusion_training_losses";
  const unsigned blocks = static_cast<unsigned>(B);
  VT_CUDA_DISPATCH_IO(op, io, T,
                      losses_kernel<T><<<blocks, kLossThreads, 0, stream>>>(
                          sched, K, t, static_cast<const T*>(model_out), x0, x_t, noise, static_cast<int>(t0), stats,
                          static_cast<T*>(grad), B, N));
  check_launch(op);
}

void diffusion_p_mean_variance(const double* sched, int64_t K, const int32_t* t, const void* model_out,
                               const float* x, bool clip, float* mean, float* log_variance, float* x0_hat, int64_t B,
                               int64_t N, DType io, cudaStream_t stream) {
  if (B * N == 0) return;
  const char* op = "cuda::diffusion_p_mean_variance";
  VT_CUDA_DISPATCH_IO(op, io, T,
                      p_mean_variance_kernel<T><<<grid_1d(B * N, kThreads), kThreads, 0, stream>>>(
                          sched, K, t, static_cast<const T*>(model_out), x, clip, mean, log_variance, x0_hat, B, N));
  check_launch(op);
}

void diffusion_ddpm_step(const double* sched, int64_t K, const int32_t* t, const void* model_out, const float* x,
                         const float* noise, float* out, bool clip, int64_t B, int64_t N, DType io,
                         cudaStream_t stream) {
  if (B * N == 0) return;
  const char* op = "cuda::diffusion_ddpm_step";
  VT_CUDA_DISPATCH_IO(op, io, T,
                      ddpm_kernel<T><<<grid_1d(B * N, kThreads), kThreads, 0, stream>>>(
                          sched, K, t, static_cast<const T*>(model_out), x, noise, out, clip, B, N));
  check_launch(op);
}

void diffusion_ddim_step(const double* sched, int64_t K, const int32_t* t, const void* model_out, const float* x,
                         double eta, const float* noise, float* out, bool clip, int64_t B, int64_t N, DType io,
                         cudaStream_t stream) {
  if (B * N == 0) return;
  const char* op = "cuda::diffusion_ddim_step";
  VT_CUDA_DISPATCH_IO(op, io, T,
                      ddim_kernel<T><<<grid_1d(B * N, kThreads), kThreads, 0, stream>>>(
                          sched, K, t, static_cast<const T*>(model_out), x, eta, noise, out, clip, B, N));
  check_launch(op);
}

void diffusion_cfg_combine(const void* model_out, double scale, int64_t guided, void* out, int64_t B, int64_t C2,
                           int64_t S, DType io, cudaStream_t stream) {
  if (B * C2 * S == 0) return;
  const char* op = "cuda::diffusion_cfg_combine";
  VT_CUDA_DISPATCH_IO(op, io, T,
                      cfg_kernel<T><<<grid_1d(B * C2 * S, kThreads), kThreads, 0, stream>>>(
                          static_cast<const T*>(model_out), scale, guided, static_cast<T*>(out), B, C2, S));
  check_launch(op);
}

void diffusion_loss_means(const double* stats, int64_t B, float* out, cudaStream_t stream) {
  loss_means_kernel<<<1, 32, 0, stream>>>(stats, B, out);
  check_launch("cuda::diffusion_loss_means");
}

}  // namespace cuda
}  // namespace vt
