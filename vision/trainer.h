// vtrain's DeiT training loop (docs/recipes.md §2-7) on CPU:
//   data   ImageFolder train/val, DeiT train transform (RRC, flip, RandAugment,
//          RandomErasing), RASampler or plain shuffle, Mixup/CutMix per batch
//   step   forward (drop-path) -> soft-target / label-smoothing CE -> backward
//          -> optional grad clipping -> AdamW (lr per step from the cosine
//          schedule, no decay on 1-D params, pos_embed, cls_token) -> EMA
//   eval   top-1 / top-5 / loss of the model and the EMA every N epochs and at the end
//   ckpt   step_<N>/ directories (core/checkpoint_dir.h), keep last K and the best
//
// Determinism: every random draw is keyed by (seed, purpose, epoch or step,
// index), and the checkpoint stores (step, epoch, batches done in the epoch),
// so a resumed run computes bitwise the same next steps as one never stopped
// (same thread count).
//
// Outputs in <out_dir>/<name>/ (train/run_dir.h): config.yaml (resolved,
// absolute paths), log.txt, metrics.jsonl (train lines every
// log.every_steps, eval lines), tb/, step_<N>/. A non-finite loss or gradient
// norm follows train.max_nonfinite (train/nonfinite.h; default: stop with
// NonFiniteLoss naming the step and the last good checkpoint). The steps of
// an epoch run in train/loop.h's TrainLoop (shared with dittrain); the
// model's forward/backward is this trainer's StepTask.
//
// Data parallel (core/dist.h, `mpirun -np W vtrain CONFIG`): train.batch_size
// is the global batch, each rank reads batch_size / W of it (ConfigError
// when W does not divide it) from its DistributedSampler / RASampler shard;
// the loop averages gradients and loss over ranks; evaluation counts are
// summed over ranks (vision/evaluate.h); only rank 0 writes. Mixup/CutMix
// pair global sample i with B-1-i of the global batch (the ranks all-gather
// the step's images) and drop-path masks are keyed by global row, so a step
// does not depend on the world size.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "core/config.h"
#include "vision/evaluate.h"  // EvalResult
#include "train/nonfinite.h"  // NonFiniteLoss
#include "vision/train_config.h"

namespace vt {

struct TrainSummary {
  int64_t steps = 0;          // optimizer steps done in total
  double last_loss = 0;       // training loss of the last step run
  EvalResult final_eval, final_eval_ema;
  double best_top1 = 0;
  int64_t best_step = -1;
  std::string run_dir, last_checkpoint;
};

class Trainer {
 public:
  // Validates everything that can be checked before a run directory exists:
  // the data root and both splits, the checkpoint to resume from. Nothing is
  // written until run().
  Trainer(const Config& cfg, const std::string& config_path);
  ~Trainer();

  TrainSummary run();

  // The per-step training losses of this process, in order (tests).
  const std::vector<double>& losses() const;
  const TrainOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace vt
