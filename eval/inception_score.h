// Inception Score as ADM's evaluator computes it (openai/guided-diffusion,
// evaluations/evaluator.py: Evaluator.compute_inception_score, after
// openai/improved-gan's inception_score/model.py):
//   p_i = softmax(logits_i) over the 1008 classes of the FID Inception's FC
//         layer applied to the pool3 features without its bias (pool3 x W;
//         torch-fidelity's "logits_unbiased");
//   the samples are cut into splits of `split_size` in sample order (the
//   last split is shorter when N is not a multiple, as evaluator.py's
//   range(0, N, split_size));
//   per split: exp(mean_i sum_c p_ic (log p_ic - log mean_j p_jc));
//   IS = mean over the splits (ADM reports no standard deviation; `std` is
//   numpy's population std of the split scores, as torch-fidelity's).
// Softmax and KL are float64 (ADM: softmax in float32, the KL in float64).
// With N a multiple of split_size this equals torch-fidelity's
// isc_features_to_metric(logits, splits=N / split_size, shuffle=False).
#pragma once
#include <cstdint>
#include <vector>

namespace vt {

struct InceptionScore {
  double mean = 0, std = 0;
  std::vector<double> splits;  // score of each split, in order
};

// logits: [n, classes] float32, row-major. Throws std::invalid_argument when
// split_size < 1, classes < 2 or n < 2 * split_size (fewer than two splits'
// worth of samples: the score of one split has no spread to report and is
// not what papers compare); the message gives the counts, callers add the
// file and key.
InceptionScore inception_score(const float* logits, int64_t n, int64_t classes, int64_t split_size = 5000);

}  // namespace vt
