// Classifier evaluation shared by vtrain (after epochs) and `veval top1`:
// top-1 / top-5 accuracy and the mean cross-entropy of a VisionTransformer
// over a dataset read with the DeiT eval transform (docs/recipes.md §2: resize the
// shorter side to int(img_size / crop_pct), bicubic, center crop, Normalize).
//
// Every sample is counted exactly once: the order is the dataset's natural
// order sharded by eval_order (rank r takes r, r + world, ..., no padding)
// and the loader keeps the ragged last batch (drop_last = false). Shards
// hold raw counts (correct1, correct5, loss_sum), so merging the results of
// all ranks gives the same numbers for any world size.
//
// Ranking rules (those of vtrain's evaluation since its first run): top-1
// is cross_entropy_forward_backward's argmax count (kernels/cross_entropy.h);
// top-5 counts a sample when fewer than 5 classes score strictly above the
// label's logit (ties go to the label).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "data_pipeline/dataset.h"
#include "data_pipeline/loader.h"
#include "vision/train_config.h"
#include "vision/vit.h"

namespace vt {

struct EvalResult {
  double top1 = 0, top5 = 0, loss = 0;  // top-k in percent; loss = mean cross-entropy (no smoothing)
  int64_t images = 0;  // images evaluated: the figures are over these
  // data.on_corrupt=skip: images left out because their file could not be
  // read (each such file is also warned about in the log). The loader puts
  // the next readable image in their row; that row is not counted, so no
  // image counts twice.
  int64_t skipped = 0;
  // Raw counts behind the figures (what merge_eval_results adds up).
  int64_t correct1 = 0, correct5 = 0;
  double loss_sum = 0;  // sum over images of the per-image cross-entropy
};

struct EvalOptions {
  int batch_size = 256;
  int workers = 2, prefetch = 4;
  uint64_t seed = 0;  // keys the loader only; the eval transform draws nothing
  OnCorrupt on_corrupt = OnCorrupt::Error;
  // Evaluate an evenly spaced subset of this many samples (ImageFolder lists
  // samples class by class, so a prefix would hold only the first classes).
  std::optional<int64_t> max_images;
  int rank = 0, world = 1;
  // Polled after each batch (may be empty): true ends the pass there, the
  // result holding the batches done. vtrain's final evaluation polls the
  // stop-signal flag (core/stop_request.h), so a SIGTERM does not wait for
  // the whole validation split; the ranks then agree on the stop together.
  std::function<bool()> stop;
};

// The eval transform of a training config (img_size, crop_pct, dct_scaling).
ImagePipelineConfig deit_eval_pipeline(const TrainOptions& o);
// Batch size, workers, prefetch, seed, on_corrupt, max_images of a config.
EvalOptions eval_options(const TrainOptions& o);

// Dataset indices that rank `o.rank` of `o.world` evaluates, in order.
EpochOrder eval_shard_order(int64_t dataset_size, const EvalOptions& o);

// Runs the model (eval mode) over this rank's shard. The dataset's samples
// must have the model's input shape and labels < num_classes (throws
// std::invalid_argument naming both otherwise). progress (may be empty) is
// called after each batch with (images done, images in the shard).
EvalResult evaluate_classifier(VisionTransformer& model, std::shared_ptr<const Dataset> ds, const EvalOptions& o,
                               const std::function<void(int64_t, int64_t)>& progress = {});

// Adds the counts of the shards of all ranks and recomputes the figures.
EvalResult merge_eval_results(const std::vector<EvalResult>& shards);

// Data parallel (core/dist.h): every rank's shard result in, the result of
// the whole split out on every rank: the counts (images, correct1,
// correct5, skipped) and loss_sum summed over ranks with one all-reduce,
// then the figures recomputed. A single process gets its own result back.
EvalResult reduce_eval_result(const EvalResult& shard);

}  // namespace vt
