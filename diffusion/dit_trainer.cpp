#include "diffusion/dit_trainer.h"


#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <cmath>
#include <limits>
#include <filesystem>
#include <stdexcept>

#include "backbone/optimizer_state.h"
#include "core/allocator.h"
#include "core/dist.h"
#include "core/log.h"
#include "core/npz.h"
#include "core/out_of_memory.h"
#include "core/philox.h"
#include "core/stop_request.h"
#include "core/progress.h"
#include "data_pipeline/batch_upload.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/loader.h"
#include "data_pipeline/sampler.h"
#include "data_pipeline/unreadable_classes.h"
#include "core/checkpoint_dir.h"
#include "diffusion/gaussian_diffusion.h"
#include "diffusion/image_grid.h"
#include "vae/autoencoder_kl.h"
#include "diffusion/sampler.h"
#include "kernels/diffusion.h"
#include "kernels/elementwise.h"
#include "kernels/optim.h"
#include "train/memory_estimate.h"
#include "train/run_dir.h"
#include "train/run_state.h"
#include "train/loop.h"
#include "train/mechanism_scalars.h"

namespace vt {
namespace fs = std::filesystem;
namespace {

std::shared_ptr<Dataset> make_dataset(const DitTrainConfig& c) {
  if (c.data_kind == "images") {
    if (c.model.in_channels != 3)
      throw ConfigError("model.in_channels: data.kind images gives 3-channel RGB, got " +
                        std::to_string(c.model.in_channels));
    ImagePipelineConfig ic;
    ic.kind = ImagePipeline::Adm;
    ic.size = static_cast<int>(c.model.input_size);
    ic.hflip = c.hflip;
    return std::make_shared<ImageFolderDataset>(c.data_root, ic);
  }
  auto ds = std::make_shared<LatentShardDataset>(c.data_root, c.hflip, static_cast<int>(c.model.num_classes));
  const Shape want{c.model.in_channels, c.model.input_size, c.model.input_size};
  if (ds->sample_shape() != want)
    throw ConfigError("data.root: latent shards in '" + c.data_root + "' hold " + shape_str(ds->sample_shape()) +
                      " samples, the model expects " + shape_str(want));
  return ds;
}
}  // namespace

DitTrainer::DitTrainer(const DitTrainConfig& cfg)
    : cfg_(cfg), diff_(GaussianDiffusion::linear(cfg.num_timesteps)), nonfinite_(cfg.max_nonfinite) {
  // Every check (data, model, resume) runs before anything is written, so a
  // setup failure leaves no directory that looks like a run (open_run).
  if (cfg_.threads > 0) omp_set_num_threads(cfg_.threads);
  if (!fs::is_directory(cfg_.data_root))
    throw std::runtime_error(!cfg_.data_root_missing.empty() ? cfg_.data_root_missing
                                                             : "data.root '" + cfg_.data_root + "' (" +
                                                                   cfg_.resolved.source("data.root") +
                                                                   ") does not exist or is not a directory");
  dataset_ = make_dataset(cfg_);
  if (dataset_->num_classes() > cfg_.model.num_classes)
    throw ConfigError("model.num_classes: the data has " + std::to_string(dataset_->num_classes()) +
                      " classes, the model " + std::to_string(cfg_.model.num_classes));
  batches_per_epoch_ = dataset_->size() / cfg_.batch;
  if (batches_per_epoch_ == 0)
    throw ConfigError("train.batch_size: " + std::to_string(cfg_.batch) + " exceeds the " +
                      std::to_string(dataset_->size()) + " samples of " + cfg_.data_root);
  // train.batch_size is the global batch (DiT's global_batch_size).
  const int world = dist().world();
  if (cfg_.batch % world != 0)
    throw ConfigError("train.batch_size = " + std::to_string(cfg_.batch) + " (the global batch) is not divisible by the " +
                      std::to_string(world) + " processes of this run");
  rank_batch_ = cfg_.batch / world;

  apply_device_choice(cfg_.compute);
  model_ = std::make_unique<DiT>(cfg_.model);
  model_->init_weights(cfg_.seed);
  if (cfg_.compute.device.is_cuda())  // refused before the first GPU allocation when the step cannot fit
    check_gpu_memory_before_step({model_->backbone().config(), model_->params().numel(), rank_batch_,
                                  cfg_.model.tokens(), cfg_.compute.bf16(), /*ema=*/true, cfg_.activation_checkpointing},
                                 cfg_.compute.device.index);
  // Initialised on the host (Philox draws written through host pointers),
  // then moved: a GPU run starts from the CPU run's exact weights.
  model_->to(cfg_.compute.device);
  if (cfg_.compute.bf16()) model_->params().enable_bf16_copy();
  model_->backbone().set_activation_checkpointing(cfg_.activation_checkpointing);
  opt_ = std::make_unique<OptimizerState>(model_->params(), /*with_ema=*/true);  // DiT: EMA starts as a copy

  run_ = std::make_unique<RunDirectory>(cfg_.out_dir, cfg_.run_name, cfg_.resume);
  // data.on_corrupt=skip fills an unreadable image with the next readable
  // one: a class with none would train on other classes' images unnoticed.
  if (const auto* images = dynamic_cast<const ImageFolderDataset*>(dataset_.get()); images && cfg_.on_corrupt == "skip")
    for (const std::string& c : unreadable_classes(images->folder()))
      run_->warn("data: no image of class '" + c + "' in data.root '" + cfg_.data_root +
                 "' can be read (data.on_corrupt=skip fills them with other classes' images)");
  if (!run_->resume_path().empty()) resume_from(run_->resume_path());

  LoaderConfig lc;
  lc.batch_size = static_cast<int>(rank_batch_);
  lc.workers = std::max(1, cfg_.workers);
  lc.seed = cfg_.seed;
  lc.on_corrupt = parse_on_corrupt(cfg_.on_corrupt);
  lc.pinned_slots = cfg_.compute.device.is_cuda();  // uploaded from pinned slots
  loader_ = std::make_unique<Loader>(dataset_, lc);
  // GPU: batch s + 1 is copied on the upload stream while step s runs.
  if (cfg_.compute.device.is_cuda()) upload_ = std::make_unique<BatchUploader>(*loader_, cfg_.compute.device);

  plan_step_buffers();
}

// The step's tensors on the model's device (diffusion/dit_step.h).
void DitTrainer::plan_step_buffers() {
  sb_ = DitStepBuffers::plan(cfg_.model, diff_, rank_batch_, model_->params().weights().device());
}

const std::string& DitTrainer::run_dir() const { return run_->path(); }
const Tensor& DitTrainer::ema() const { return opt_->ema(); }

void DitTrainer::open_run() {
  if (run_->is_open()) return;
  run_->open(cfg_.resolved, cfg_.tensorboard, step_);
  log().info("dittrain: device {}", cfg_.compute.describe());
  log().info("dittrain: DiT depth {} hidden {} heads {} patch {} ({} scheme), {} parameters, {} samples, batch {} ({} processes x {}), run dir {}{}",
             cfg_.model.depth, cfg_.model.hidden, cfg_.model.heads, cfg_.model.patch, norm_scheme_name(cfg_.model.scheme),
             model_->num_params(), dataset_->size(), cfg_.batch, dist().world(), rank_batch_, run_->path(),
             run_->resume_path().empty() ? ""
                                         : ", resumed from " + run_->resume_path() + " at step " + std::to_string(step_));
  if (cfg_.log_norm_scales && model_->backbone().norm_scales().empty())
    log().warn("log.norm_scales: this {} DiT has no LayerNorm weights (DiT's block norms are non-affine; only "
               "siamese's postnorm/prenorm and hybrid's q/k/v norms have them), so nothing is logged",
               norm_scheme_name(cfg_.model.scheme));
}

DitTrainer::~DitTrainer() = default;

void DitTrainer::resume_from(const std::string& dir) {
  CheckpointLoadOptions lo;
  lo.require_ema = true;
  const CheckpointData ck = load_checkpoint(dir, lo);
  try {
    model_->load(ck.model);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + dir + "': " + e.what() +
                             resume_mismatch_hint(dir, ck.model, WeightsKind::DiT));
  }
  opt_->load_ema(ck.ema, "checkpoint '" + dir + "' ema.safetensors");
  opt_->load_optimizer(ck.optimizer, "checkpoint '" + dir + "' optimizer.safetensors");
  const RunPosition p = read_run_state(ck.state, dir);
  step_ = p.step, epoch_ = p.epoch, batch_in_epoch_ = p.batch_in_epoch;
  opt_->set_steps(p.optimizer_steps);
  nonfinite_.set_skipped_total(p.nonfinite_skipped);
  if (ck.state.contains("seed") && p.seed != cfg_.seed)
    run_->warn(fmt::format("resume: checkpoint seed {} differs from seed {}", p.seed, cfg_.seed));
  if (p.config_digest != cfg_.digest)
    run_->warn(fmt::format("resuming from {} written with a different config (digest {} vs {})", dir,
                           p.config_digest.empty() ? std::string("?") : p.config_digest, cfg_.digest));
}

std::string DitTrainer::save_checkpoint() {
  open_run();
  CheckpointData ck;
  ck.model = model_->params().state_dict();
  ck.ema = opt_->ema_dict();
  ck.optimizer = opt_->optimizer_dict();
  RunPosition p;
  p.step = step_, p.epoch = epoch_, p.batch_in_epoch = batch_in_epoch_;
  p.optimizer_steps = opt_->steps();
  p.nonfinite_skipped = nonfinite_.skipped_total();
  p.seed = cfg_.seed;
  p.config_digest = cfg_.digest;
  ck.state = run_state_json(p);
  ck.state["model"] = "DiT";
  ck.state["scheme"] = norm_scheme_name(cfg_.model.scheme);
  const std::string dir = run_->save(step_, ck, cfg_.keep_last);
  log().info("checkpoint {}", dir);
  return dir;
}

// Rank r reads entries r, r + world, ... of the one-process epoch order
// (DistributedSampler), so the ranks' batches b together hold global
// positions [b * B, (b + 1) * B) with the one-process draw ids (flips):
// this rank's row j is the step's global row j * world + r.
void DitTrainer::start_epoch() {
  EpochOrder full = train_order(dataset_->size(), cfg_.seed, static_cast<uint64_t>(epoch_), dist().rank(), dist().world());
  EpochOrder o;
  const size_t skip = static_cast<size_t>(batch_in_epoch_ * rank_batch_);
  o.indices.assign(full.indices.begin() + static_cast<std::ptrdiff_t>(std::min(skip, full.size())), full.indices.end());
  o.draw_ids.assign(full.draw_ids.begin() + static_cast<std::ptrdiff_t>(std::min(skip, full.size())),
                    full.draw_ids.end());
  if (upload_) upload_->discard();  // a batch prefetched from the previous order
  loader_->start_epoch(static_cast<uint64_t>(epoch_), std::move(o));
}

// The host part of step s: the batch into sb_.x0 (a GPU step views the
// uploader's slot; a CUDA Graph step copies it into the fixed x0_fixed_, the
// address the captured kernels read), then the host's draws, their upload
// and the noise keyed by the step (dit_step_draws).
void DitTrainer::prepare_batch(int64_t s, bool fixed_x0) {
  Batch batch;
  DeviceBatch device_batch;
  if (!(upload_ ? upload_->next(device_batch) : loader_->next(batch)))
    throw std::logic_error("dittrain: loader ran dry inside an epoch");
  if (upload_) {
    if (fixed_x0) {
      if (!x0_fixed_.defined())
        x0_fixed_ = Tensor::empty(device_batch.images.shape(), DType::F32, device_batch.images.device());
      x0_fixed_.copy_from(device_batch.images);
      sb_.x0 = x0_fixed_;
    } else {
      sb_.x0 = device_batch.images;
    }
    sb_.host_y.copy_from(device_batch.host_labels);
  } else {
    sb_.x0.copy_from(batch.images);
    sb_.host_y.copy_from(batch.labels);
  }
  if (fixed_x0) {  // a CUDA Graph step's embedding cannot read its ids back to check them (kernels/embedding.h)
    for (int64_t b = 0; b < sb_.host_y.numel(); ++b)
      if (sb_.host_y.i32()[b] < 0 || sb_.host_y.i32()[b] >= cfg_.model.num_classes)
        throw std::out_of_range("dittrain: label " + std::to_string(sb_.host_y.i32()[b]) + " of batch row " +
                                std::to_string(b) + " outside [0, model.num_classes = " +
                                std::to_string(cfg_.model.num_classes) + ")");
  }
  if (cfg_.data_kind == "latents") scale(sb_.x0, static_cast<float>(cfg_.latent_scale), sb_.x0);
  keys_.seed = cfg_.seed, keys_.step = s, keys_.global_batch = cfg_.batch;
  keys_.rank = dist().rank(), keys_.world = dist().world();
  keys_.num_timesteps = cfg_.num_timesteps, keys_.t0 = cfg_.t0_term;
  dit_step_draws(*model_, sb_, keys_);
}

// The device part: q_sample, forward, loss, backward, the means (a CUDA
// Graph step captures it once, train/step_graph.h).
void DitTrainer::device_step() { dit_step_device(*model_, sb_, keys_); }

void DitTrainer::finish_step() {
  if (++batch_in_epoch_ == batches_per_epoch_) {
    ++epoch_;
    batch_in_epoch_ = 0;
    start_epoch();
  }
  if (upload_) upload_->prefetch();  // the next batch's copy overlaps this step's queued work
}

StepTask::Output DitTrainer::prepare_step(int64_t s, std::string*) {
  prepare_batch(s, true);  // every step's shape is the same: drop_last batches of train.batch_size
  Output out;
  out.lr = cfg_.lr;
  out.where = "epoch " + std::to_string(epoch_);
  out.loss = std::numeric_limits<double>::quiet_NaN();
  out.scalars = sb_.scalars;
  step_ = s;
  return out;
}

StepTask::Output DitTrainer::forward_backward(int64_t s) {
  const int64_t B = rank_batch_;
  const int world = dist().world();
  prepare_batch(s, false);
  device_step();  // q_sample, forward, loss, backward
  finish_step();
  step_ = s;
  Output out;
  out.lr = cfg_.lr;
  out.where = "epoch " + std::to_string(epoch_);
  if (sb_.scalars.defined()) {  // GPU: the means are in sb_.scalars (dit_forward_backward)
    out.loss = std::numeric_limits<double>::quiet_NaN();
    out.scalars = sb_.scalars;
    return out;
  }
  // CPU: the per-sample losses (B x 2 doubles) give the loss the loop's
  // non-finite policy and the metrics need.
  const auto L = GaussianDiffusion::losses_from_stats(f64_data(sb_.stats), B);
  step_mse_ = step_vb_ = 0;
  for (size_t b = 0; b < L.mse.size(); ++b) step_mse_ += L.mse[b], step_vb_ += L.vb[b];
  step_mse_ /= static_cast<double>(B), step_vb_ /= static_cast<double>(B);
  if (world > 1) {  // the metrics line's means are over the global batch (the loss: TrainLoop)
    double parts[2] = {step_mse_, step_vb_};
    dist().allreduce_sum(parts, 2);
    step_mse_ = parts[0] / world, step_vb_ = parts[1] / world;
  }
  out.loss = L.mean;
  out.values = {L.mean, step_mse_, step_vb_};
  return out;
}

void DitTrainer::after_update(int64_t s, const Output& out, const UpdateResult& u) {
  losses_.emplace_back(s, out.loss);  // the mean over ranks
  if (u.applied) {  // skipped steps stay out of the means (values: loss, mse, vb; on a GPU means over ranks)
    acc_loss_ += out.loss, acc_mse_ += out.values.at(1), acc_vb_ += out.values.at(2), acc_gnorm_ += u.grad_norm;
    ++acc_n_;
  }
  if (bar_) bar_->update(s - bar_first_, {{"loss", out.loss}});
}

std::vector<std::pair<std::string, double>> DitTrainer::log_scalars(int64_t s) {
  const auto now = std::chrono::steady_clock::now();
  const double dt = std::chrono::duration<double>(now - t_log_).count();
  const double ips = dt > 0 ? static_cast<double>((s - step_log_) * cfg_.batch) / dt : 0.0;
  t_log_ = now;
  step_log_ = s;
  // Means over the steps since the last line: one batch's loss is noisy
  // (t is uniform, and the loss scale depends strongly on t).
  // No applied step since the last line (all skipped as non-finite): NaN,
  // written as null, rather than a mean of nothing that reads as loss 0.
  const double n = acc_n_ > 0 ? static_cast<double>(acc_n_) : std::numeric_limits<double>::quiet_NaN();
  std::vector<std::pair<std::string, double>> sc = {{"loss", acc_loss_ / n}, {"mse", acc_mse_ / n},
                                                    {"vb", acc_vb_ / n},     {"grad_norm", acc_gnorm_ / n},
                                                    {"lr", cfg_.lr}};
  acc_loss_ = acc_mse_ = acc_vb_ = acc_gnorm_ = 0;
  acc_n_ = 0;
  sc.emplace_back("img_per_s", ips);
  sc.emplace_back("epoch", static_cast<double>(epoch_));
  sc.emplace_back("nonfinite_skipped", static_cast<double>(nonfinite_.skipped_total()));
  if (cfg_.compute.device.is_cuda())  // GPU runs: the caching allocator's high-water mark
    sc.emplace_back("gpu_peak_gib", static_cast<double>(cuda_peak_bytes_in_use()) / (1 << 30));
  append_mechanism_scalars(sc);
  return sc;
}

// log.stream_rms / log.norm_scales: the backbone still holds this step's
// forward (nothing runs the model between the step and its metrics line).
void DitTrainer::append_mechanism_scalars(std::vector<std::pair<std::string, double>>& sc) const {
  if (cfg_.log_stream_rms)
    for (auto& kv : stream_rms_scalars(model_->backbone())) sc.push_back(std::move(kv));
  if (cfg_.log_norm_scales)
    for (auto& kv : norm_scale_scalars(model_->backbone())) sc.push_back(std::move(kv));
}

void DitTrainer::after_step(int64_t s) {
  if (!(cfg_.sample_every > 0 && (s % cfg_.sample_every == 0 || s == cfg_.steps))) return;
  // Rank 0 draws the grid; the others wait for it (without dist.timeout_s).
  if (dist().is_root())
    save_sample_grid((fs::path(run_->path()) / "samples" / ("step_" + std::to_string(s) + ".png")).string());
  dist().barrier("waiting for rank 0's sample grid", /*timed=*/false);
}

void DitTrainer::save_sample_grid(const std::string& path) {
  std::vector<int32_t> labels(static_cast<size_t>(std::max(1, cfg_.grid_images)));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % static_cast<size_t>(cfg_.model.num_classes));
  // Nothing is written before the grid is complete; a device out-of-memory
  // (the EMA copy, sampling or the VAE decode) names the grid and its key.
  const std::string oom_context = "sample grid of " + std::to_string(labels.size()) + " images (sample.batch=" +
                                  std::to_string(cfg_.grid.batch) + " per model call, doubled under guidance; lower it)";
  const Tensor images = naming_out_of_memory(oom_context, [&] {
    DiT ema_model(cfg_.model);
    ema_model.to(cfg_.compute.device);  // sampled where training runs
    Tensor w = ema_model.params().weights();
    w.copy_from(opt_->ema());
    if (cfg_.compute.bf16()) ema_model.params().enable_bf16_copy();
    Tensor x = sample_images(ema_model, cfg_.grid, labels);
    if (cfg_.data_kind == "latents") scale(x, static_cast<float>(1.0 / cfg_.latent_scale), x);
    // Latent grids are decoded to images when a VAE is configured (vae.path).
    if (cfg_.data_kind == "latents" && !cfg_.vae_path.empty())
      x = AutoencoderKL::load(cfg_.vae_path, cfg_.compute.device, cfg_.vae_precision).decode(x).to(Device::cpu());
    return to_uint8_nhwc(x);
  });
  save_png_grid(path, images);
}

void DitTrainer::train(int64_t stop_at) {
  open_run();
  try {
    train_until(stop_at);
    run_->throw_if_write_failed();  // ckpt.on_write_error: retry, and the last write failed
  } catch (const StopRequested& e) {
    if (dist().is_root()) log().warn("dittrain: {}", e.what());
    run_->close();
    throw;
  } catch (const std::exception& e) {
    // main() prints the error on stderr; the run's log must hold it too.
    run_->close_with_error(std::string("dittrain: run failed: ") + e.what());
    throw;
  }
}

void DitTrainer::train_until(int64_t stop_at) {
  int64_t end = stop_at > 0 ? std::min(stop_at, cfg_.steps) : cfg_.steps;
  if (cfg_.max_steps) end = std::min(end, *cfg_.max_steps);
  if (step_ >= end) {
    log().info("dittrain: already at step {} (target {})", step_, end);
    return;
  }
  start_epoch();
  ProgressOptions po;
  po.items_per_step = static_cast<double>(cfg_.batch);
  po.unit = "img";
  po.interval_s = cfg_.log_every_s;
  if (!dist().is_root()) po.out = nullptr;  // rank 0 reports
  ProgressBar bar("train", end - step_, po);
  bar_ = &bar, bar_first_ = step_;
  t_log_ = std::chrono::steady_clock::now();
  step_log_ = step_;
  LoopOptions lo;
  lo.log_every_steps = cfg_.log_every_steps;
  lo.ckpt_every_steps = cfg_.ckpt_every_steps;
  lo.log_at_end = lo.ckpt_at_end = true;
  lo.allreduce_bucket_mb = cfg_.allreduce_bucket_mb;
  lo.cuda_graph = cfg_.cuda_graph;
  lo.cluster = cfg_.cluster;
  lo.update.clip_grad = cfg_.clip_grad;
  lo.update.adamw.beta1 = cfg_.beta1, lo.update.adamw.beta2 = cfg_.beta2, lo.update.adamw.eps = cfg_.adam_eps;
  lo.update.adamw.weight_decay = cfg_.weight_decay;
  lo.update.ema_decay = static_cast<float>(cfg_.ema_decay);
  TrainLoop loop(model_->params(), *opt_, nonfinite_, *run_, lo);
  try {
    loop.run(*this, step_, end);
  } catch (...) {
    bar_ = nullptr;
    throw;
  }
  bar_ = nullptr;
  bar.finish();
}

}  // namespace vt
