#include "kernels/cpu/attention.h"
#include "kernels/cpu/fast_exp.h"

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace vt {
namespace cpu {
namespace {

// Row-major C = alpha op(A) op(B) + beta C. Called inside an OpenMP region, so
// oneDNN runs it on the calling thread (it checks omp_in_parallel).
void sgemm(char ta, char tb, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (st != dnnl_success) throw std::runtime_error("attention: dnnl_sgemm failed with status " + std::to_string(st));
}

// The softmax exp: glibc's expf does not vectorise without -ffast-math and
// GCC will not if-convert exp_approx's clamp on baseline x86-64, so the hot
// loop below is exp_approx written in SSE2 intrinsics (part of x86-64
// itself) for x <= 0 (after max subtraction); exp_approx handles tails.
// row[j] = exp(row[j] - mx); returns the sum of the new values.
float exp_shift_sum(float* row, int64_t n, float mx) {
  int64_t j = 0;
  float sum = 0.0f;
#ifdef __SSE2__
  const __m128 vmx = _mm_set1_ps(mx), lo = _mm_set1_ps(-87.0f), log2e = _mm_set1_ps(1.44269504088896341f);
  const __m128 half = _mm_set1_ps(0.5f), c1 = _mm_set1_ps(0.693359375f), c2 = _mm_set1_ps(-2.12194440e-4f);
  const __m128 one = _mm_set1_ps(1.0f);
  __m128 acc = _mm_setzero_ps();
  for (; j + 4 <= n; j += 4) {
    __m128 x = _mm_max_ps(_mm_sub_ps(_mm_loadu_ps(row + j), vmx), lo);
    const __m128i ni = _mm_cvttps_epi32(_mm_sub_ps(_mm_mul_ps(x, log2e), half));
    const __m128 fn = _mm_cvtepi32_ps(ni);
    const __m128 r = _mm_sub_ps(_mm_sub_ps(x, _mm_mul_ps(fn, c1)), _mm_mul_ps(fn, c2));
    __m128 y = _mm_set1_ps(1.9875691500e-4f);
    y = _mm_add_ps(_mm_mul_ps(y, r), _mm_set1_ps(1.3981999507e-3f));
    y = _mm_add_ps(_mm_mul_ps(y, r), _mm_set1_ps(8.3334519073e-3f));
    y = _mm_add_ps(_mm_mul_ps(y, r), _mm_set1_ps(4.1665795894e-2f));
    y = _mm_add_ps(_mm_mul_ps(y, r), _mm_set1_ps(1.6666665459e-1f));
    y = _mm_add_ps(_mm_mul_ps(y, r), _mm_set1_ps(5.0000001201e-1f));
    y = _mm_add_ps(_mm_add_ps(_mm_mul_ps(_mm_mul_ps(y, r), r), r), one);
    const __m128 pow2 = _mm_castsi128_ps(_mm_slli_epi32(_mm_add_epi32(ni, _mm_set1_epi32(127)), 23));
    y = _mm_mul_ps(y, pow2);
    _mm_storeu_ps(row + j, y);
    acc = _mm_add_ps(acc, y);
  }
  alignas(16) float lanes[4];
  _mm_store_ps(lanes, acc);
  sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
#endif
  for (; j < n; ++j) sum += (row[j] = exp_approx(row[j] - mx));
  return sum;
}

float row_max(const float* row, int64_t n) {
  int64_t j = 0;
  float mx = row[0];
#ifdef __SSE2__
  if (n >= 4) {
    __m128 m = _mm_loadu_ps(row);
    for (j = 4; j + 4 <= n; j += 4) m = _mm_max_ps(m, _mm_loadu_ps(row + j));
    alignas(16) float lanes[4];
    _mm_store_ps(lanes, m);
    mx = std::max(std::max(lanes[0], lanes[1]), std::max(lanes[2], lanes[3]));
  }
#endif
  for (; j < n; ++j) mx = std::max(mx, row[j]);
  return mx;
}

void softmax_rows(float* s, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; ++i) {
    float* row = s + i * cols;
    const float inv = 1.0f / exp_shift_sum(row, cols, row_max(row, cols));
#pragma omp simd
    for (int64_t j = 0; j < cols; ++j) row[j] *= inv;
  }
}

// Per-thread [T, T] block, grown once and reused across calls so the hot
// loop never allocates.
float* thread_scratch(int64_t n) {
  thread_local std::vector<float> buf;
  if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
  return buf.data();
}

}  // namespace

void attention_forward(const float* qkv, float* out, float* probs, int64_t B, int64_t T, int64_t H,
                       int64_t Dh) {
  const int64_t D = H * Dh, ld = 3 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    const float* q = qkv + b * T * ld + h * Dh;
    const float* k = q + D;
    const float* v = q + 2 * D;
    float* s = probs ? probs + bh * T * T : thread_scratch(T * T);
    sgemm('N', 'T', T, T, Dh, scale, q, ld, k, ld, 0.0f, s, T);
    softmax_rows(s, T, T);
    sgemm('N', 'N', T, Dh, T, 1.0f, s, T, v, ld, 0.0f, out + b * T * D + h * Dh, D);
  }
}

void attention_backward(const float* qkv, const float* probs, const float* dout, float* dqkv, int64_t B,
                        int64_t T, int64_t H, int64_t Dh) {
  const int64_t D = H * Dh, ld = 3 * D;
  const float scale = 1.0f / std::sqrt(static_cast<float>(Dh));
#pragma omp parallel for schedule(dynamic, 1)
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const int64_t b = bh / H, h = bh % H;
    const float* q = qkv + b * T * ld + h * Dh;
    const float* k = q + D;
    const float* v = q + 2 * D;
    const float* p = probs + bh * T * T;
    const float* dO = dout + b * T * D + h * Dh;
    float* dq = dqkv + b * T * ld + h * Dh;
    float* dk = dq + D;
    float* dv = dq + 2 * D;
    float* ds = thread_scratch(T * T);
    sgemm('N', 'T', T, T, Dh, 1.0f, dO, D, v, ld, 0.0f, ds, T);   // dP = dO V^T
    sgemm('T', 'N', T, Dh, T, 1.0f, p, T, dO, D, 0.0f, dv, ld);   // dV = P^T dO
    // Softmax backward: dS_ij = P_ij (dP_ij - sum_l P_il dP_il).
    for (int64_t i = 0; i < T; ++i) {
      const float* pr = p + i * T;
      float* dr = ds + i * T;
      float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
      for (int64_t j = 0; j < T; ++j) dot += pr[j] * dr[j];
#pragma omp simd
      for (int64_t j = 0; j < T; ++j) dr[j] = pr[j] * (dr[j] - dot);
    }
    sgemm('N', 'N', T, Dh, T, scale, ds, T, k, ld, 0.0f, dq, ld);  // dQ = scale dS K
    sgemm('T', 'N', T, Dh, T, scale, ds, T, q, ld, 0.0f, dk, ld);  // dK = scale dS^T Q
  }
}

}  // namespace cpu
}  // namespace vt
