// Improved precision and recall (Kynkaanniemi et al. 2019, "Improved
// Precision and Recall Metric for Assessing Generative Models") as ADM's
// evaluator computes them (openai/guided-diffusion, evaluations/evaluator.py:
// ManifoldEstimator with nhood_sizes=(3,), DistanceBlock):
//   d(u, v) = max(|u|^2 - 2 u.v + |v|^2, 0), the SQUARED Euclidean distance;
//   radius(x) = the k-th smallest d(x, y) over the set of x INCLUDING x
//               itself (index k of the sorted row, so the k-th neighbour
//               other than x for distinct points; k = 3);
//   precision = share of samples s with d(s, r) <= radius(r) for some
//               reference r; recall = share of references r with
//               d(r, s) <= radius(s) for some sample s.
// ADM evaluates d in float16 (float32 only when a half result overflows)
// and keeps float32 radii. Here, on the CPU every distance is float64
// (features are float32, converted exactly; blocked Eigen GEMMs of row x
// column blocks, so 50 000 x 10 000 x 2048 never materialises more than one
// block). With a CUDA device the dot products are cuBLAS SGEMMs (fp32
// accumulation, no TF32) of the features uploaded once, copied back block by
// block into page-locked memory, the next block's SGEMM and copy queued
// before the host works on this one (so the device and the host overlap);
// norms, sums and comparisons stay float64 on the host, each block's rows
// spread over the OpenMP threads. The two can differ only where a distance
// and a radius agree to fp32 rounding.
// eval/README.md gives the measured fp16 difference.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace vt {

struct ManifoldOptions {
  int k = 3;                // neighbourhood size (ADM: 3)
  int64_t row_block = 2048;  // rows of one distance block
  int64_t col_block = 2048;  // columns of one distance block
  Device device = Device::cpu();  // where the dot products run (CPU or CUDA)
};

// feats: [n, d] float32 row-major. Returns [n] squared radii (float64).
// Throws std::invalid_argument when n <= k or d < 1.
std::vector<double> manifold_radii(const float* feats, int64_t n, int64_t d, const ManifoldOptions& opt = {});

struct PrecisionRecall {
  double precision = 0, recall = 0;
  int64_t samples_in = 0;  // samples inside some reference ball
  int64_t refs_in = 0;     // references inside some sample ball
};

// ref: [nr, d], samples: [ns, d] (float32 row-major); radii from
// manifold_radii of each set (computed here when the pointers are null).
PrecisionRecall precision_recall(const float* ref, int64_t nr, const float* samples, int64_t ns, int64_t d,
                                 const ManifoldOptions& opt = {}, const std::vector<double>* ref_radii = nullptr,
                                 const std::vector<double>* sample_radii = nullptr);

}  // namespace vt
