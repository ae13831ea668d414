#include "kernels/cuda/cross_entropy.h"

#include <cmath>

#include "kernels/cuda/common.cuh"

namespace vt {
namespace cuda {

namespace {

using namespace detail;

constexpr int kThreads = 256;

// Fixed-tree block reductions over kThreads threads (the same order on every
// run). The leading barrier protects the previous call's readers.
__device__ double tree_sum(double v) {
  __shared__ double buf[kThreads];
  __syncthreads();
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
    __syncthreads();
  }
  return buf[0];
}

// (value, index) maximum; ties go to the smaller index, so the result is the
// first maximum, as the CPU's strict ">" scan.
__device__ void tree_argmax(float& v, int32_t& i) {
  __shared__ float bv[kThreads];
  __shared__ int32_t bi[kThreads];
  __syncthreads();
  bv[threadIdx.x] = v;
  bi[threadIdx.x] = i;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float ov = bv[threadIdx.x + s];
      const int32_t oi = bi[threadIdx.x + s];
      if (ov > bv[threadIdx.x] || (ov == bv[threadIdx.x] && oi < bi[threadIdx.x])) {
        bv[threadIdx.x] = ov;
        bi[threadIdx.x] = oi;
      }
    }
    __syncthreads();
  }
  v = bv[0];
  i = bi[0];
}

// Per-thread strided scan of a row for its first maximum; threads with no
// element carry (-inf, K) so they never win.
__device__ void row_argmax(const float* l, int64_t k, float& v, int32_t& idx) {
  v = -INFINITY;
  idx = static_cast<int32_t>(k);
  for (int64_t c = threadIdx.x; c < k; c += kThreads)
    if (l[c] > v || idx == k) {
      v = l[c];
      idx = static_cast<int32_t>(c);
    }
  tree_argmax(v, idx);
}

__global__ void rows_kernel(const float* logits, const int32_t* __restrict__ labels,
                            const float* __restrict__ targets, int64_t k, float smoothing, float gscale,
                            float* dlogits, int32_t* __restrict__ pred, double* __restrict__ row_loss,
                            int32_t* __restrict__ row_hit) {
  const int64_t r = blockIdx.x;
  const float* l = logits + r * k;
  float mx;
  int32_t amax;
  row_argmax(l, k, mx, amax);
  double se = 0.0;
  for (int64_t c = threadIdx.x; c < k; c += kThreads) se += exp(static_cast<double>(l[c] - mx));
  const double lse = static_cast<double>(mx) + log(tree_sum(se));
  double loss;
  int32_t want;  // the class a correct prediction names
  float tsum_f = 1.0f;
  bool bad = false;
  if (targets) {
    const float* t = targets + r * k;
    double ts = 0.0, tl = 0.0;
    for (int64_t c = threadIdx.x; c < k; c += kThreads) {
      ts += t[c];
      tl += static_cast<double>(t[c]) * l[c];
    }
    ts = tree_sum(ts);
    tl = tree_sum(tl);
    float tv;
    row_argmax(t, k, tv, want);
    loss = lse * ts - tl;
    tsum_f = static_cast<float>(ts);
  } else {
    want = labels[r];
    bad = want < 0 || want >= k;
    double mean_l = 0.0;
    if (smoothing != 0.0f) {
      for (int64_t c = threadIdx.x; c < k; c += kThreads) mean_l += l[c];
      mean_l = tree_sum(mean_l) / static_cast<double>(k);
    }
    const double s = smoothing;
    loss = bad ? NAN : (1.0 - s) * (lse - l[want]) + s * (lse - mean_l);
  }
  if (threadIdx.x == 0) {
    row_loss[r] = loss;
    row_hit[r] = !bad && amax == want;
    if (pred) pred[r] = amax;
  }
  if (!dlogits) return;
  // dlogits may alias logits: every thread's reads of the row (the label's
  // logit for the loss included, read after the reductions' last barrier)
  // must be done before any thread overwrites it.
  __syncthreads();
  float* g = dlogits + r * k;
  const float lse_f = static_cast<float>(lse);
  const double s = smoothing;
  const float off = static_cast<float>(s / static_cast<double>(k));
  const float on = static_cast<float>(1.0 - s) + off;
  for (int64_t c = threadIdx.x; c < k; c += kThreads) {
    const float p = expf(l[c] - lse_f);
    if (targets) g[c] = gscale * (p * tsum_f - targets[r * k + c]);
    else g[c] = bad ? NAN : gscale * (p - (c == want ? on : off));
  }
}

__global__ void reduce_kernel(const double* __restrict__ row_loss, const int32_t* __restrict__ row_hit, int64_t b,
                              double* stats, float* stats_f32) {
  double loss = 0.0, hits = 0.0;
  for (int64_t r = threadIdx.x; r < b; r += kThreads) {
    loss += row_loss[r];
    hits += row_hit[r];
  }
  loss = tree_sum(loss);
  hits = tree_sum(hits);
  if (threadIdx.x == 0) {
    const double mean = b > 0 ? loss / static_cast<double>(b) : 0.0;
    stats[0] = mean;
    stats[1] = hits;
    if (stats_f32) {
      stats_f32[0] = static_cast<float>(mean);
      stats_f32[1] = static_cast<float>(hits);
    }
  }
}

}  // namespace

void cross_entropy(const float* logits, const int32_t* labels, const float* targets, int64_t B, int64_t K,
                   float smoothing, float grad_scale, float* dlogits, int32_t* pred, double* stats,
                   float* stats_f32, cudaStream_t stream) {
  const char* op = "cuda::cross_entropy";
  if ((labels == nullptr) == (targets == nullptr))
    throw std::invalid_argument(std::string(op) + ": exactly one of labels and targets must be given");
  if (B > 2147483647) throw std::invalid_argument(std::string(op) + ": more than 2^31 - 1 rows");
  Workspace ws(static_cast<size_t>(B) * (sizeof(double) + sizeof(int32_t)) + 8, stream);
  double* row_loss = ws.f64();
  int32_t* row_hit = reinterpret_cast<int32_t*>(row_loss + B);
  const float gscale = B > 0 ? grad_scale / static_cast<float>(B) : 0.0f;
  if (B > 0) {
    rows_kernel<<<static_cast<unsigned>(B), kThreads, 0, stream>>>(logits, labels, targets, K, smoothing, gscale,
                                                                  dlogits, pred, row_loss, row_hit);
    check_launch(op);
  }
  reduce_kernel<<<1, kThreads, 0, stream>>>(row_loss, row_hit, B, stats, stats_f32);
  check_launch(op);
}

}  // namespace cuda
}  // namespace vt
