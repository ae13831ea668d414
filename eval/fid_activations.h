// Per-image Inception activations of a PATH for ADM's evaluation suite
// (eval/adm_suite.h), kept in memory (50 000 images: pool 410 MB, spatial
// 405 MB, logits 202 MB, float32):
//   pool    [N, D]    pool3 features (FID, precision / recall);
//   spatial [N, 2023] mixed_6/conv[..., :7], (h, w, c) order (sFID);
//   logits  [N, C]    pool3 x fc.weight^T, no bias (Inception Score).
// PATH is a folder of images (recursive, sorted) or an .npz with arr_0
// uint8 [N, H, W, 3] (eval/fid_inputs.h; arr_0 streamed a batch at a time,
// core/npz_image_reader.h); images are preprocessed by
// protocol (eval/fid_protocol.h) on the host, run through the network in
// batches (on its device) and come back in image order.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/npz.h"
#include "core/npz_stream_writer.h"
#include "eval/fid_protocol.h"
#include "eval/frechet.h"
#include "eval/inception.h"

namespace vt {

struct FidActivations {
  int64_t n = 0, pool_dim = 0, spatial_dim = 0, logit_dim = 0;  // a dim is 0 when not computed
  std::vector<float> pool, spatial, logits;
};

// Throws std::runtime_error naming the path for a statistics file, a
// folder without images, arr_0 that is not uint8 [N, H, W, 3], fewer than 2
// images or an undecodable image. `progress` (nullable): (done, total).
FidActivations compute_fid_activations(const std::string& path, const InceptionFid& net, FidProtocol protocol,
                                       int64_t batch, bool spatial, bool logits,
                                       void (*progress)(int64_t, int64_t) = nullptr);

// "pool", "spatial", "logits" (float32; those computed) and "count" (int64).
void save_activations_npz(const std::string& path, const FidActivations& a);

// Mean and covariance (N - 1) of rows [n, d] (float64, StatsAccumulator).
GaussianStats stats_of_rows(const std::vector<float>& rows, int64_t n, int64_t d);

// The uint8 [N, H, W, 3] pixels of PATH as member `key` of w, streamed
// `batch` images at a time (an .npz's arr_0, or a folder whose images all
// have one size). Returns false, the member left unfinished (w is then to be
// discarded), when a folder's images differ in size.
bool write_stacked_images(const std::string& path, NpzStreamWriter& w, const std::string& key, int64_t batch);

}  // namespace vt
