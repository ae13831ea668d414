#include "kernels/cpu/cross_entropy.h"

#include <cmath>

namespace vt {
namespace cpu {

namespace {

struct RowStats {
  float max = 0.0f;
  int32_t argmax = 0;
  double lse = 0.0;  // log sum_c exp(l_c)
};

RowStats row_stats(const float* l, int64_t k) {
  RowStats s;
  s.max = l[0];
  for (int64_t c = 1; c < k; ++c)
    if (l[c] > s.max) {
      s.max = l[c];
      s.argmax = static_cast<int32_t>(c);
    }
  double se = 0.0;
  for (int64_t c = 0; c < k; ++c) se += std::exp(static_cast<double>(l[c] - s.max));
  s.lse = static_cast<double>(s.max) + std::log(se);
  return s;
}

}  // namespace

double cross_entropy_hard(const float* logits, const int32_t* labels, int64_t b, int64_t k, float smoothing,
                          float grad_scale, float* dlogits, int32_t* pred, int64_t* correct) {
  double total = 0.0;
  int64_t hits = 0;
  const double s = smoothing;
  const float gscale = grad_scale / static_cast<float>(b);
  const float off = static_cast<float>(s / static_cast<double>(k));
  const float on = static_cast<float>(1.0 - s) + off;
#pragma omp parallel for schedule(static) reduction(+ : total, hits) if (b * k > 16384)
  for (int64_t r = 0; r < b; ++r) {
    const float* l = logits + r * k;
    const RowStats st = row_stats(l, k);
    const int32_t y = labels[r];
    double mean_l = 0.0;
    if (s != 0.0) {
      for (int64_t c = 0; c < k; ++c) mean_l += l[c];
      mean_l /= static_cast<double>(k);
    }
    total += (1.0 - s) * (st.lse - l[y]) + s * (st.lse - mean_l);
    hits += st.argmax == y;
    if (pred) pred[r] = st.argmax;
    if (dlogits) {
      float* g = dlogits + r * k;
      const float lse = static_cast<float>(st.lse);
      for (int64_t c = 0; c < k; ++c) {
        const float p = std::exp(l[c] - lse);
        g[c] = gscale * (p - (c == y ? on : off));
      }
    }
  }
  if (correct) *correct = hits;
  return b > 0 ? total / static_cast<double>(b) : 0.0;
}

double cross_entropy_soft(const float* logits, const float* targets, int64_t b, int64_t k, float grad_scale,
                          float* dlogits, int32_t* pred, int64_t* correct) {
  double total = 0.0;
  int64_t hits = 0;
  const float gscale = grad_scale / static_cast<float>(b);
#pragma omp parallel for schedule(static) reduction(+ : total, hits) if (b * k > 16384)
  for (int64_t r = 0; r < b; ++r) {
    const float* l = logits + r * k;
    const float* t = targets + r * k;
    const RowStats st = row_stats(l, k);
    double tsum = 0.0, tl = 0.0;
    int32_t targmax = 0;
    for (int64_t c = 0; c < k; ++c) {
      tsum += t[c];
      tl += static_cast<double>(t[c]) * l[c];
      if (t[c] > t[targmax]) targmax = static_cast<int32_t>(c);
    }
    total += st.lse * tsum - tl;
    hits += st.argmax == targmax;
    if (pred) pred[r] = st.argmax;
    if (dlogits) {
      float* g = dlogits + r * k;
      const float lse = static_cast<float>(st.lse), ts = static_cast<float>(tsum);
      for (int64_t c = 0; c < k; ++c) {
        const float p = std::exp(l[c] - lse);
        g[c] = gscale * (p * ts - t[c]);
      }
    }
  }
  if (correct) *correct = hits;
  return b > 0 ? total / static_cast<double>(b) : 0.0;
}

}  // namespace cpu
}  // namespace vt
