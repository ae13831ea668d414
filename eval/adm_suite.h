// The evaluation suite of ADM (openai/guided-diffusion,
// evaluations/evaluator.py), by which DiT and the papers comparing with it
// report FID, sFID, Inception Score, precision and recall:
//   FID       Frechet distance of pool3 statistics (eval/frechet.h);
//   sFID      Frechet distance of the spatial statistics (mixed_6/conv,
//             first 7 channels, 2023-d; eval/inception.h);
//   IS        eval/inception_score.h on the samples' unbiased logits;
//   precision, recall  eval/manifold.h on the pool3 features (k = 3),
//             precision from the samples, recall from the reference.
// Inputs (PATH as eval/fid_inputs.h):
//   samples: images (a folder or an .npz with arr_0), or statistics (then
//            only FID and, with mu_s/sigma_s, sFID);
//   ref:     images, or a reference .npz as ADM publishes them
//            (VIRTUAL_imagenet256_labeled.npz: mu, sigma, mu_s, sigma_s and
//            arr_0): the statistics are used directly, the images only for
//            precision / recall; `veval stats` writes the same keys plus
//            "pool" (float32 [N, 2048] features, so precision / recall need
//            no network run) and "count".
// A metric that the inputs cannot give (a reference without mu_s, samples
// given as statistics, weights without fc.weight, fewer than two IS splits)
// is reported unavailable with the reason naming the file and key; the
// others are computed. Dimension mismatches are errors naming both files
// and keys. Everything runs in one process; statistics are float64.
#pragma once
#include <cstdint>
#include <string>

#include "eval/fid_activations.h"
#include "eval/fid_inputs.h"
#include "eval/fid_protocol.h"
#include "eval/frechet.h"
#include "eval/inception.h"
#include "eval/inception_score.h"
#include "eval/manifold.h"

namespace vt {

struct SuiteMetrics {
  bool fid = true, sfid = true, is = true, precision = true, recall = true;
  bool chosen = false;  // given by --metrics (an unavailable chosen metric fails the command)
  bool pr() const { return precision || recall; }
};
// "all" or a comma list of fid, sfid, is, precision, recall
// (std::invalid_argument naming the bad word).
SuiteMetrics parse_suite_metrics(const std::string& list);

struct SuiteOptions {
  FidProtocol protocol = FidProtocol::Adm;
  int64_t batch = 50;
  int64_t is_split = 5000;
  ManifoldOptions manifold;
  SqrtmMethod sqrtm = SqrtmMethod::SymmetricEig;
  std::string save_activations;  // samples' activations .npz ("" = none)
  void (*progress)(int64_t, int64_t) = nullptr;
  void (*log)(const char*) = nullptr;  // stage messages (nullable)
};

struct SuiteValue {
  bool available = false;
  double value = 0;
  std::string why;  // reason when unavailable
};

struct SuiteSideInfo {
  std::string path;
  FidSourceKind kind = FidSourceKind::ImageFolder;
  int64_t count = 0;  // images behind it (0 = unknown)
};

struct SuiteReport {
  SuiteValue fid, sfid, is, precision, recall;
  FrechetResult fid_terms, sfid_terms;
  InceptionScore is_detail;
  PrecisionRecall pr_detail;
  SuiteSideInfo samples, ref;
  int64_t feature_dim = 0;
};

// `net` may be null only when neither side needs a network run.
SuiteReport run_adm_suite(const std::string& samples, const std::string& ref, const InceptionFid* net,
                          const SuiteMetrics& metrics, const SuiteOptions& opt);

// Writes a reference .npz from the images at `images`: mu, sigma (pool3),
// mu_s, sigma_s (spatial), float64; pool (float32 [N, D]); count (int64);
// arr_0 (uint8 [N, H, W, 3], when the images share one size) so that ADM's
// evaluator can read the file as a reference batch; protocol (the name's
// ASCII bytes, uint8 [n]: "adm" or "pytorch-fid"), which run_adm_suite
// checks against its own protocol (files without it, such as ADM's, are
// taken as they are). Returns the count.
int64_t write_adm_reference(const std::string& images, const std::string& out, const InceptionFid& net,
                            const SuiteOptions& opt);

}  // namespace vt
