#include "eval/inception_score.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vt {

InceptionScore inception_score(const float* logits, int64_t n, int64_t classes, int64_t split_size) {
  if (split_size < 1) throw std::invalid_argument("Inception Score: split size must be >= 1, got " + std::to_string(split_size));
  if (classes < 2) throw std::invalid_argument("Inception Score: needs >= 2 classes, got " + std::to_string(classes));
  if (n < 2 * split_size)
    throw std::invalid_argument("Inception Score needs at least 2 splits of " + std::to_string(split_size) +
                                " samples (" + std::to_string(2 * split_size) + "), got " + std::to_string(n));
  InceptionScore out;
  std::vector<double> p(static_cast<size_t>(split_size * classes)), logp(p.size()), mean(static_cast<size_t>(classes));
  for (int64_t s = 0; s < n; s += split_size) {
    const int64_t m = std::min(split_size, n - s);
    std::fill(mean.begin(), mean.end(), 0.0);
    for (int64_t i = 0; i < m; ++i) {
      const float* z = logits + (s + i) * classes;
      double* pi = p.data() + i * classes;
      double* li = logp.data() + i * classes;
      double mx = z[0];
      for (int64_t c = 1; c < classes; ++c) mx = std::max(mx, static_cast<double>(z[c]));
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(static_cast<double>(z[c]) - mx);
      const double lse = std::log(sum);
      for (int64_t c = 0; c < classes; ++c) {
        li[c] = static_cast<double>(z[c]) - mx - lse;
        pi[c] = std::exp(li[c]);
        mean[c] += pi[c];
      }
    }
    for (double& v : mean) v = std::log(v / static_cast<double>(m));
    double kl = 0;
    for (int64_t i = 0; i < m; ++i) {
      const double* pi = p.data() + i * classes;
      const double* li = logp.data() + i * classes;
      double k = 0;
      for (int64_t c = 0; c < classes; ++c) k += pi[c] * (li[c] - mean[c]);
      kl += k;
    }
    out.splits.push_back(std::exp(kl / static_cast<double>(m)));
  }
  double sum = 0;
  for (double v : out.splits) sum += v;
  out.mean = sum / static_cast<double>(out.splits.size());
  double var = 0;
  for (double v : out.splits) var += (v - out.mean) * (v - out.mean);
  out.std = std::sqrt(var / static_cast<double>(out.splits.size()));
  return out;
}

}  // namespace vt
