#include "data_pipeline/mixup.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace vt {

CutmixBox cutmix_box(int H, int W, double lam, int cy, int cx) {
  const double r = std::sqrt(1.0 - lam);
  const int cut_h = static_cast<int>(H * r), cut_w = static_cast<int>(W * r);
  CutmixBox b;
  b.y0 = std::clamp(cy - cut_h / 2, 0, H);
  b.y1 = std::clamp(cy + cut_h / 2, 0, H);
  b.x0 = std::clamp(cx - cut_w / 2, 0, W);
  b.x1 = std::clamp(cx + cut_w / 2, 0, W);
  return b;
}

double cutmix_lambda(const CutmixBox& b, int H, int W) {
  return 1.0 - static_cast<double>(b.y1 - b.y0) * (b.x1 - b.x0) / (static_cast<double>(H) * W);
}

void mixup_targets(const int32_t* labels, int B, int K, double lam, double smoothing, float* targets) {
  const double off = smoothing / K, on = 1.0 - smoothing + off;
  for (int i = 0; i < B; ++i) {
    const int a = labels[i], b = labels[B - 1 - i];
    if (a < 0 || a >= K || b < 0 || b >= K)
      throw std::invalid_argument("mixup_targets: label " + std::to_string(a < 0 || a >= K ? a : b) +
                                  " outside [0, " + std::to_string(K) + ")");
    float* t = targets + static_cast<size_t>(i) * K;
    for (int k = 0; k < K; ++k) t[k] = static_cast<float>(off);
    // Written as timm's y1*lam + y2*(1-lam) for the two hot entries.
    for (int k : {a, b}) {
      const double y1 = k == a ? on : off, y2 = k == b ? on : off;
      t[k] = static_cast<float>(y1 * lam + y2 * (1.0 - lam));
    }
  }
}

MixupDecision draw_mixup(int H, int W, Philox& rng, const MixupParams& p) {
  MixupDecision d;
  // Draw order fixed so a batch's decision depends only on its key.
  const bool apply = rng.uniform_double() < p.prob;
  const bool use_cutmix = p.mixup_alpha > 0 && p.cutmix_alpha > 0 ? rng.uniform_double() < p.switch_prob
                                                                   : p.cutmix_alpha > 0;
  const double alpha = use_cutmix ? p.cutmix_alpha : p.mixup_alpha;
  const double lam_draw = rng.beta(alpha, alpha);
  const int cy = static_cast<int>(rng.integer(0, H - 1)), cx = static_cast<int>(rng.integer(0, W - 1));
  if (apply && alpha > 0) {
    d.applied = true;
    d.cutmix = use_cutmix;
    d.lambda = lam_draw;
    if (use_cutmix) {
      d.box = cutmix_box(H, W, lam_draw, cy, cx);
      d.lambda = cutmix_lambda(d.box, H, W);
    }
  }
  return d;
}

MixupDecision mixup_batch(float* images, int B, int C, int H, int W, const int32_t* labels, float* targets,
                          Philox& rng, const MixupParams& p) {
  if (B % 2 != 0) throw std::invalid_argument("mixup_batch: batch size " + std::to_string(B) + " must be even");
  const MixupDecision d = draw_mixup(H, W, rng, p);
  if (d.applied) {
    const size_t plane = static_cast<size_t>(H) * W, sample = plane * C;
    if (d.cutmix) {
      // Pairs (i, B-1-i) exchange the box: a swap, since B is even.
      for (int i = 0; i < B / 2; ++i) {
        float* a = images + i * sample;
        float* b = images + static_cast<size_t>(B - 1 - i) * sample;
        for (int c = 0; c < C; ++c)
          for (int y = d.box.y0; y < d.box.y1; ++y) {
            const size_t off = c * plane + static_cast<size_t>(y) * W;
            std::swap_ranges(a + off + d.box.x0, a + off + d.box.x1, b + off + d.box.x0);
          }
      }
    } else {
      const float l = static_cast<float>(d.lambda), m = static_cast<float>(1.0 - d.lambda);
      for (int i = 0; i < B / 2; ++i) {
        float* a = images + i * sample;
        float* b = images + static_cast<size_t>(B - 1 - i) * sample;
        for (size_t k = 0; k < sample; ++k) {
          const float va = a[k], vb = b[k];
          a[k] = va * l + vb * m;
          b[k] = vb * l + va * m;
        }
      }
    }
  }
  mixup_targets(labels, B, p.num_classes, d.lambda, p.label_smoothing, targets);
  return d;
}

}  // namespace vt
