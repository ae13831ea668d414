// dittrain's training loop (docs/recipes.md §8, docs/design.md §5):
//   per step s = 1, 2, ...: a batch x0 (pixels in [-1, 1], or latents times
//   data.latent_scale), labels dropped to the null class with p =
//   class_dropout, t ~ U{0..T-1}, noise ~ N(0, I), x_t = q_sample, loss =
//   mse + vb (learned sigma), backward, AdamW (constant lr, wd 0), EMA.
// Randomness (t, noise, label dropout) is keyed by (seed, purpose, s,
// global row), data order and flips by (seed, epoch, draw id), so a resumed
// run repeats an uninterrupted one step for step.
//
// Data parallel (core/dist.h, as vtrain): train.batch_size is the global
// batch, each of the W ranks reads batch_size / W samples (DistributedSampler
// interleave: rank r's row j is global row j * W + r) and keys every
// per-sample draw by the global row, so a step's samples, timesteps, noise
// and dropped labels do not depend on W; TrainLoop averages gradients and
// loss, mse/vb are averaged here; rank 0 writes the run directory and grids.
//
// Run directory <out_dir>/<name>/ (train/run_dir.h, as vtrain): config.yaml
// (resolved, absolute paths), log.txt, metrics.jsonl, tb/, step_<N>/
// checkpoints (state.json: train/run_state.h), and samples/step_<N>.png
// grids from the EMA model with fixed noise and labels (label
// i % num_classes, sample.seed; latent models' grids decoded by the VAE of
// vae.path when set).
//
// Non-finite policy (train/nonfinite.h, as vtrain): train.max_nonfinite 0
// stops at the first non-finite loss or gradient norm with NonFiniteLoss;
// N > 0 skips up to N consecutive such steps (no optimizer/EMA update,
// counted in metrics), then stops.
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "diffusion/dit_model.h"
#include "diffusion/dit_step.h"
#include "diffusion/dit_train_config.h"
#include "diffusion/gaussian_diffusion.h"
#include "train/loop.h"  // StepTask, NonFiniteLoss

namespace vt {

class BatchUploader;
class Dataset;
class Loader;
class OptimizerState;
class ProgressBar;
class RunDirectory;

// The step of train/loop.h's TrainLoop is DiT's (StepTask); the loop, the
// update and the run directory are the scaffold's, shared with vtrain.
class DitTrainer : private StepTask {
 public:
  // Builds data, model and optimizer and resumes per resume (auto: the
  // run's newest checkpoint; never: throws std::runtime_error when the run
  // directory already holds checkpoints; DIR: that checkpoint). Writes
  // nothing: the run directory is created by the first train() or
  // save_checkpoint(). Throws ConfigError when the data contradict the
  // config (more classes than model.num_classes, fewer samples than
  // train.batch_size) and std::runtime_error for missing or unreadable
  // data and checkpoints.
  explicit DitTrainer(const DitTrainConfig& cfg);
  ~DitTrainer();

  // Trains until train.steps (or train.max_steps), or stops after step
  // `stop_at` (> 0; a checkpoint is written there) to simulate an
  // interruption.
  void train(int64_t stop_at = -1);

  int64_t step() const { return step_; }
  const std::string& run_dir() const;
  // (step, loss) of every step run by this process (loss: mean over ranks).
  const std::vector<std::pair<int64_t, double>>& losses() const { return losses_; }
  // Writes a checkpoint of the current state; returns its directory.
  std::string save_checkpoint();
  // Writes the EMA model's fixed-noise grid to path.
  void save_sample_grid(const std::string& path);
  ParamStore& store() { return model_->params(); }
  const Tensor& ema() const;

 private:
  void resume_from(const std::string& dir);
  void open_run();  // creates the run directory and its files (once)
  void start_epoch();
  void train_until(int64_t stop_at);
  // StepTask: batch, timesteps, noise, q_sample, forward, loss, backward;
  // then counters, means for the metrics line, sample grids, checkpoints.
  Output forward_backward(int64_t step) override;
  // CUDA Graph steps (train/loop.h): forward_backward in three parts.
  bool splits_step() const override { return upload_ != nullptr; }
  Output prepare_step(int64_t step, std::string* not_replayable) override;
  void device_step() override;
  void finish_step() override;
  void prepare_batch(int64_t step, bool fixed_x0);
  void after_update(int64_t step, const Output& out, const UpdateResult& u) override;
  std::vector<std::pair<std::string, double>> log_scalars(int64_t step) override;
  void append_mechanism_scalars(std::vector<std::pair<std::string, double>>& scalars) const;
  void after_step(int64_t step) override;
  void save(const std::string&) override { save_checkpoint(); }

  DitTrainConfig cfg_;
  GaussianDiffusion diff_;  // the full training schedule
  std::unique_ptr<RunDirectory> run_;
  std::unique_ptr<DiT> model_;
  std::unique_ptr<OptimizerState> opt_;  // AdamW moments and the EMA
  NonFiniteGuard nonfinite_;
  std::shared_ptr<Dataset> dataset_;
  std::unique_ptr<Loader> loader_;
  std::unique_ptr<BatchUploader> upload_;  // GPU: the pinned upload ring (data_pipeline/batch_upload.h)
  int64_t step_ = 0, epoch_ = 0, batch_in_epoch_ = 0, batches_per_epoch_ = 0;
  int64_t rank_batch_ = 0;  // this rank's share of train.batch_size
  std::vector<std::pair<int64_t, double>> losses_;
  double acc_loss_ = 0, acc_mse_ = 0, acc_vb_ = 0, acc_gnorm_ = 0;  // since the last metrics line
  int64_t acc_n_ = 0;
  double step_mse_ = 0, step_vb_ = 0;  // of the step in flight (CPU)
  ProgressBar* bar_ = nullptr;         // of the running train()
  int64_t bar_first_ = 0, step_log_ = 0;
  std::chrono::steady_clock::time_point t_log_;
  void plan_step_buffers();
  DitStepBuffers sb_;  // the step's tensors (diffusion/dit_step.h); on a GPU sb_.x0 views the uploaded batch
  DitStepKeys keys_;   // the step in flight's keys (prepare_batch)
  Tensor x0_fixed_;    // CUDA Graph steps: the batch's fixed home
};

}  // namespace vt
