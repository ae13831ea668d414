#include "vision/trainer.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <numeric>
#include <vector>

#include "core/dist.h"
#include "core/log.h"
#include "core/philox.h"
#include "core/progress.h"
#include "data_pipeline/augment_plan.h"
#include "data_pipeline/batch_upload.h"
#include "data_pipeline/loader.h"
#if VT_NVJPEG
#include "data_pipeline/device/device_batch_decode.h"
#endif
#include "core/allocator.h"
#include "kernels/augment.h"
#include "kernels/cross_entropy.h"
#include "kernels/mixup.h"
#include "kernels/optim.h"
#include "core/checkpoint_dir.h"
#include "core/config_paths.h"
#include "core/run_control.h"
#include "core/stop_request.h"
#include "backbone/optimizer_state.h"
#include "train/run_dir.h"
#include "train/run_state.h"
#include "train/loop.h"
#include "train/memory_estimate.h"
#include "train/mechanism_scalars.h"
#include "vision/evaluate.h"
#include "vision/split_dataset.h"
#include "vision/train_step.h"
#include "vision/vit.h"

namespace vt {

namespace fs = std::filesystem;

namespace {

// Philox purpose tag of the trainer's Mixup/CutMix draws (distinct from the
// data pipeline's 0xDA7A.... tags).
constexpr uint64_t kPurposeTrainMix = 0x7A1A0001;

ImagePipelineConfig train_pipeline(const TrainOptions& o) {
  ImagePipelineConfig c;
  c.kind = ImagePipeline::DeitTrain;
  c.size = static_cast<int>(o.vit.img_size);
  c.hflip = o.hflip;
  c.rand_augment = o.rand_augment;
  c.random_erasing = o.erasing_prob > 0;
  c.dct_scaling = o.dct_scaling;
  c.decode = o.decode;
  c.rrc.scale_lo = o.rrc_scale[0], c.rrc.scale_hi = o.rrc_scale[1];
  c.rrc.ratio_lo = o.rrc_ratio[0], c.rrc.ratio_hi = o.rrc_ratio[1];
  c.randaug.num_ops = o.randaug_ops;
  c.randaug.magnitude = o.randaug_magnitude;
  c.randaug.magnitude_std = o.randaug_std;
  c.erasing.probability = o.erasing_prob;
  return c;
}

}  // namespace

struct Trainer::Impl {
  Config cfg;
  TrainOptions o;
  std::shared_ptr<Dataset> train_ds, val_ds;
  std::unique_ptr<VisionTransformer> model;
  std::unique_ptr<OptimizerState> opt;
  std::unique_ptr<RunDirectory> run;
  NonFiniteGuard nonfinite;
  // Position: optimizer steps done, current epoch, batches of it done.
  int64_t step = 0, epoch = 0, batch_in_epoch = 0;
  double best_top1 = -1;
  int64_t best_step = -1;
  std::vector<double> losses;

  // This rank's share of train.batch_size (the global batch).
  int64_t rank_batch = 0;

  // Data parallel: rank r of world w reads entries r, r + w, ... of the
  // global order (DistributedSampler; RASampler per rank as DeiT's), so the
  // ranks' batches b together hold global positions [b * B, (b + 1) * B)
  // of the one-process order, with the same draw ids (augmentation keys).
  // Images of an epoch: all of the split, or data.max_train_images evenly
  // spaced ones (position p of the subset is dataset image p * size / n).
  int64_t train_images() const {
    const int64_t size = train_ds->size();
    return o.max_train_images ? std::min(size, *o.max_train_images) : size;
  }
  EpochOrder make_order(uint64_t ep, int rank, int world) const {
    const int64_t n = train_images(), size = train_ds->size();
    EpochOrder order = o.repeated_aug > 1 ? ra_order(n, o.seed, ep, rank, world, o.repeated_aug)
                                          : train_order(n, o.seed, ep, rank, world, true);
    if (n < size)
      for (int64_t& i : order.indices) i = i * size / n;
    return order;
  }
  EpochOrder make_order(uint64_t ep) const { return make_order(ep, dist().rank(), dist().world()); }
  // Steps of an epoch: those of one process over the global batch, whatever
  // the world size (the wrap-around padding of the shards is never read).
  int64_t steps_per_epoch(uint64_t ep) const {
    return static_cast<int64_t>(make_order(ep, 0, 1).size()) / o.batch_size;
  }

  nlohmann::json state_json() const {
    RunPosition p;
    p.step = step, p.epoch = epoch, p.batch_in_epoch = batch_in_epoch;
    p.optimizer_steps = opt->steps();
    p.nonfinite_skipped = nonfinite.skipped_total();
    p.seed = o.seed;
    p.config_digest = resume_digest(cfg);
    nlohmann::json s = run_state_json(p);
    s["sampler"] = {{"kind", o.repeated_aug > 1 ? "ra" : "shuffle"},
                    {"epoch", epoch},
                    {"position", batch_in_epoch * o.batch_size}};
    // Every stream is a pure function of these keys (docs/design.md §2).
    s["rng"] = {{"seed", o.seed}, {"drop_path_step", step}, {"mixup", {{"epoch", epoch}, {"batch", batch_in_epoch}}}};
    s["best_top1"] = best_top1;
    s["best_step"] = best_step;
    return s;
  }

  void save(const std::string& why) {
    CheckpointData d;
    d.model = model->params().state_dict();
    d.ema = opt->ema_dict();
    d.optimizer = opt->optimizer_dict();
    d.state = state_json();
    const std::string path = run->save(step, d, o.keep_last, o.keep_best ? best_step : -1);
    log().info("checkpoint {} ({})", path, why);
  }

  void restore(const CheckpointData& d, const std::string& path) {
    try {
      model->params().load(d.model, /*strict=*/true);
      opt->load_optimizer(d.optimizer, "optimizer.safetensors");
      if (o.ema) {
        if (d.ema.empty()) opt->reset_ema_to_weights();  // EMA switched on now
        else opt->load_ema(d.ema, "ema.safetensors");
      }
    } catch (const std::exception& e) {
      throw std::runtime_error("checkpoint '" + path + "': " + e.what() + resume_mismatch_hint(path, d.model, WeightsKind::VitClassifier));
    }
    const RunPosition p = read_run_state(d.state, path);
    step = p.step, epoch = p.epoch, batch_in_epoch = p.batch_in_epoch;
    opt->set_steps(p.optimizer_steps);
    nonfinite.set_skipped_total(p.nonfinite_skipped);
    best_top1 = d.state.value("best_top1", -1.0);
    best_step = d.state.value("best_step", int64_t(-1));
    if (p.config_digest != resume_digest(cfg))
      run->warn(fmt::format("resuming from {} written with a different config (digest {} vs {})", path,
                            p.config_digest.empty() ? std::string("?") : p.config_digest, resume_digest(cfg)));
  }

  // The run's final evaluation (`final` set) obeys a stop request as a step
  // does: each rank ends its pass at the next batch once it holds a signal,
  // the ranks agree (the same collective as after a step), and on a stop
  // nothing is recorded, a checkpoint of the trained state is written
  // (unless `final->saved`: the one on disk holds it already) and
  // StopRequested is thrown; resuming repeats the evaluation only.
  // Evaluations between epochs run to their end first (the loop's
  // check_stop after them).
  struct FinalEval {
    bool saved = false;
  };
  // `*stopped` (final evaluations): the agreed stop signal that cut the
  // pass short, 0 when none did; a stopped pass is not recorded.
  EvalResult evaluate(const std::string& label, const FinalEval* final = nullptr, int* stopped = nullptr) {
    EvalOptions eo = eval_options(o);
    eo.rank = dist().rank(), eo.world = dist().world();
    if (final) eo.stop = [] { return local_stop_signal() != 0; };
    EvalResult e = reduce_eval_result(evaluate_classifier(*model, val_ds, eo));
    if (final && (*stopped = agreed_stop_signal()) != 0) return e;
    const int64_t seen = e.images;
    log().info("eval {} epoch {} step {}: top-1 {:.2f}% top-5 {:.2f}% loss {:.4f} ({} images{})", label, epoch, step,
               e.top1, e.top5, e.loss, seen,
               e.skipped > 0 ? fmt::format(", {} unreadable skipped", e.skipped) : std::string());
    std::vector<std::pair<std::string, double>> m{
        {"epoch", static_cast<double>(epoch)}, {"top1", e.top1}, {"top5", e.top5}, {"loss", e.loss}};
    if (o.on_corrupt == "skip") m.emplace_back("corrupt_skipped", static_cast<double>(e.skipped));
    if (o.log_norm_scales) append(m, norm_scale_scalars(model->backbone()));
    run->write_metrics(step, m, {{"split", label}}, label);
    return e;
  }

  TrainSummary loop();

  // log.stream_rms: the train metrics line also carries the per-block stream
  // RMS of this step's forward (the backbone keeps its activations until the
  // next forward, and nothing runs the model between the step and the line).
  using Scalars = std::vector<std::pair<std::string, double>>;
  Scalars with_mechanism_scalars(Scalars sc) const {
    if (o.log_stream_rms) append(sc, stream_rms_scalars(model->backbone()));
    return sc;
  }
  static void append(Scalars& to, const Scalars& more) { to.insert(to.end(), more.begin(), more.end()); }

  struct StepWork {  // per-run buffers and constants of the step, on the model's device
    MixupParams mix;
    AugmentSettings augment;  // data.augment_on=device: the plans' settings
    Tensor augmented;         // data.augment_on=device: the batch after augment_apply (kernels/augment.h), model's device
    AugmentScratch augment_scratch;  // and its buffers, kept: a step allocates nothing after the first
    Tensor logits, dlogits, targets;
    Tensor images, labels;  // GPU: the uploaded batch (the CPU step reads the loader's)
    BatchUploader* upload = nullptr;  // GPU: the pinned upload ring (data_pipeline/batch_upload.h)
    DeviceBatch device_batch;         // GPU: this step's batch, from `upload`
    Tensor stats;                     // GPU: F32 [2], the step's loss and correct count (TrainLoop's scalars)
    Tensor fixed_images, fixed_labels;  // CUDA Graph steps: the batch's fixed home (prepare_split)
    Tensor step_number;                 // CUDA Graph steps: I64 [1], the drop-path keys' step (prepare_split)
    VitStepInputs split_in;             // CUDA Graph steps: this step's inputs (prepare_split)
    MixupDecision split_mix;            // and its Mixup/CutMix draw
  };

  // Mixup/CutMix over several ranks as in one process: timm pairs global
  // sample i with B-1-i of the global batch, which usually sits on another
  // rank. Every rank gathers the step's images and labels (rank r's row j is
  // global row j * world + r), mixes the global batch with the step's draws
  // (the same rng on every rank) and keeps its own rows. Costs one
  // all-gather of the batch per step and world x the mixing work. Writes
  // this rank's mixed images into `batch` and its soft targets into the
  // host tensor `targets` [Bl, K]; GPU ranks upload both afterwards.
  void mix_global_batch(Batch& batch, Philox& rng, StepWork& w, Tensor& targets_out) {
    const int world = dist().world(), rank = dist().rank();
    const Shape& s = batch.images.shape();
    const int64_t Bl = s[0], per = s[1] * s[2] * s[3], K = targets_out.size(1), Bg = Bl * world;
    const auto img = dist().allgather_bytes(batch.images.f32(), static_cast<size_t>(Bl * per) * sizeof(float));
    const auto lab = dist().allgather_bytes(batch.labels.i32(), static_cast<size_t>(Bl) * sizeof(int32_t));
    std::vector<float> images(static_cast<size_t>(Bg * per)), targets(static_cast<size_t>(Bg * K));
    std::vector<int32_t> labels(static_cast<size_t>(Bg));
    for (int64_t g = 0; g < Bg; ++g) {  // rank-major -> global order
      const int64_t src = (g % world) * Bl + g / world;
      std::memcpy(images.data() + g * per, img.data() + static_cast<size_t>(src * per) * sizeof(float),
                  static_cast<size_t>(per) * sizeof(float));
      std::memcpy(&labels[static_cast<size_t>(g)], lab.data() + static_cast<size_t>(src) * sizeof(int32_t),
                  sizeof(int32_t));
    }
    mixup_batch(images.data(), static_cast<int>(Bg), static_cast<int>(s[1]), static_cast<int>(s[2]),
                static_cast<int>(s[3]), labels.data(), targets.data(), rng, w.mix);
    for (int64_t j = 0; j < Bl; ++j) {
      const int64_t g = j * world + rank;
      std::memcpy(batch.images.f32() + j * per, images.data() + g * per, static_cast<size_t>(per) * sizeof(float));
      std::memcpy(targets_out.f32() + j * K, targets.data() + g * K, static_cast<size_t>(K) * sizeof(float));
    }
  }

  // data.augment_on=device: `images` are the loader's uint8 crops [B, H, W, 3]
  // (on the host, or uploaded); each sample's augmentation as the host's,
  // on their device (kernels/augment.h), before Mixup/CutMix as there.
  // `images` then views w.augmented, F32 [B, 3, H, W]. Else nothing.
  static void augment_batch(Tensor& images, const std::vector<AugmentPlan>& plans, StepWork& w) {
    if (images.dtype() != DType::U8) return;
    augment_crops(images, plans, w.augment, w.augmented, &w.augment_scratch);
    images = w.augmented;
  }

  // The model's part of a step on `batch` (batch b of the epoch):
  // (Mixup/CutMix) forward, loss, backward into the store's gradients.
  // Returns the loss (NaN on a GPU: it stays in w.stats); the update is
  // TrainLoop's (train/loop.h).
  double forward_backward(Batch& batch, int64_t b, StepWork& w) {
    ParamStore& ps = model->params();
    const int64_t B = rank_batch;
    if (!ps.device().is_cpu()) {
      device_forward_backward(b, w);
      return std::numeric_limits<double>::quiet_NaN();
    }
    CrossEntropyResult ce;
    ps.zero_grad();
    augment_batch(batch.images, batch.plans, w);
    if (o.mixing()) {
      Philox rng(o.seed, philox_stream(kPurposeTrainMix, static_cast<uint64_t>(epoch), static_cast<uint64_t>(b)));
      const Shape& s = batch.images.shape();
      if (dist().world() > 1) mix_global_batch(batch, rng, w, w.targets);
      else
        mixup_batch(batch.images.f32(), static_cast<int>(B), static_cast<int>(s[1]), static_cast<int>(s[2]),
                    static_cast<int>(s[3]), batch.labels.i32(), w.targets.f32(), rng, w.mix);
      model->forward(batch.images, w.logits, true, o.seed, static_cast<uint64_t>(step));
      ce = soft_cross_entropy_forward_backward(w.logits, w.targets, w.dlogits);
    } else {
      model->forward(batch.images, w.logits, true, o.seed, static_cast<uint64_t>(step));
      ce = cross_entropy_forward_backward(w.logits, batch.labels, static_cast<float>(o.label_smoothing), w.dlogits);
    }
    model->backward(w.dlogits);
    return ce.loss;
  }

  // The same step with the batch on the GPU (w.device_batch, uploaded by
  // w.upload), mixed there with the host's draws (identical keys and
  // decision), loss on the device (w.stats: loss, correct; read by TrainLoop
  // once per log interval): vision/train_step.h, which the step benchmark
  // runs too. With several ranks the global batch is mixed on the host as
  // on CPU ranks (mix_global_batch: the pairs span ranks) before its copy
  // (the uploader's prepare hook, loop()), then images and targets are
  // uploaded, so GPU ranks see the batches of CPU ranks and of one process.
  void device_forward_backward(int64_t b, StepWork& w) {
    w.images = w.device_batch.images;
    w.labels = w.device_batch.labels;
    VitStepInputs in;
    in.images = w.images, in.labels = w.labels;
    in.label_smoothing = o.label_smoothing;
    in.seed = o.seed, in.step = static_cast<uint64_t>(step);
    MixupDecision d;
    if (o.mixing() && dist().world() > 1) {
      in.mixed_targets = w.device_batch.targets;
    } else if (o.mixing()) {  // (vit_device_forward_backward refuses an odd batch)
      Philox rng(o.seed, philox_stream(kPurposeTrainMix, static_cast<uint64_t>(epoch), static_cast<uint64_t>(b)));
      const Shape& s = w.images.shape();
      d = draw_mixup(static_cast<int>(s[2]), static_cast<int>(s[3]), rng, w.mix);
      in.mix = &d;
      in.label_smoothing = w.mix.label_smoothing;
    }
    VitStepBuffers buf{w.logits, w.dlogits, w.targets, w.stats};  // views of the step's tensors
    vit_device_forward_backward(*model, in, buf);
  }

  // CUDA Graph steps (train/step_graph.h), one process: prepare_split is
  // the host part of the GPU step — the uploaded batch copied from the
  // uploader's slot into fixed buffers (the captured kernels read these
  // addresses every step), the step number the drop-path kernels read, and
  // Mixup/CutMix applied there with the host's draw (vit_device_mix);
  // device_body the rest (vit_device_body), the same launches with the same
  // arguments every step. Together they are device_forward_backward.
  void prepare_split(int64_t b, StepWork& w, std::string* why) {
    const DeviceBatch& d = w.device_batch;
    if (!w.fixed_images.defined() || w.fixed_images.shape() != d.images.shape()) {
      if (w.fixed_images.defined())
        *why = "batch " + d.images.str() + " after " + w.fixed_images.str();
      w.fixed_images = Tensor::empty(d.images.shape(), d.images.dtype(), d.images.device());
      w.fixed_labels = Tensor::empty(d.labels.shape(), d.labels.dtype(), d.labels.device());
    }
    w.fixed_images.copy_from(d.images);
    w.fixed_labels.copy_from(d.labels);
    w.images = w.fixed_images;
    w.labels = w.fixed_labels;
    if (!w.step_number.defined()) {  // the drop-path kernels read the step from here
      w.step_number = Tensor::zeros({1}, DType::I64, d.images.device());
      model->backbone().set_step_source(w.step_number);
    }
    Tensor host_step = Tensor::empty({1}, DType::I64);
    static_cast<int64_t*>(host_step.raw())[0] = step;
    w.step_number.copy_from(host_step);
    VitStepInputs& in = w.split_in;
    in = VitStepInputs();
    in.images = w.images, in.labels = w.labels;
    in.label_smoothing = o.label_smoothing;
    in.seed = o.seed, in.step = static_cast<uint64_t>(step);
    if (o.mixing()) {
      Philox rng(o.seed, philox_stream(kPurposeTrainMix, static_cast<uint64_t>(epoch), static_cast<uint64_t>(b)));
      const Shape& sh = w.images.shape();
      w.split_mix = draw_mixup(static_cast<int>(sh[2]), static_cast<int>(sh[3]), rng, w.mix);
      in.mix = &w.split_mix;
      in.label_smoothing = w.mix.label_smoothing;
    }
    VitStepBuffers buf{w.logits, w.dlogits, w.targets, w.stats};
    vit_device_mix(in, buf);
  }
  void device_body(StepWork& w) {
    VitStepBuffers buf{w.logits, w.dlogits, w.targets, w.stats};
    vit_device_body(*model, w.split_in, buf);
  }

  // vtrain's StepTask: the steps of one epoch's loader, run by TrainLoop.
  struct EpochSteps : StepTask {
    Impl& I;
    Loader& loader;
    StepWork& work;
    ProgressBar& bar;
    const int64_t steps_per_epoch, first_batch;
    bool& saved_now;
    bool& evaluated_now;
    TrainSummary& sum;
    const std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
    Batch batch;
    double grad_norm = 0, last_lr = 0;  // of the last step
    const int64_t first_step = I.step;

    EpochSteps(Impl& impl, Loader& l, StepWork& w, ProgressBar& b, int64_t spe, bool& saved, bool& evaluated,
               TrainSummary& s)
        : I(impl), loader(l), work(w), bar(b), steps_per_epoch(spe), first_batch(impl.batch_in_epoch),
          saved_now(saved), evaluated_now(evaluated), sum(s) {}

    Output forward_backward(int64_t) override {
      if (!(work.upload ? work.upload->next(work.device_batch) : loader.next(batch)))
        throw std::logic_error("vtrain: the loader ran dry inside an epoch");
      if (work.upload) augment_batch(work.device_batch.images, work.device_batch.plans, work);
      evaluated_now = saved_now = false;
      const int64_t b = I.batch_in_epoch;
      const double lr = lr_at(I.o.sched, I.epoch, b, steps_per_epoch);
      Output out;
      out.loss = I.forward_backward(batch, b, work);
      if (work.upload) work.upload->prefetch();  // the next batch's copy overlaps this step
      out.lr = lr;
      out.where = "epoch " + std::to_string(I.epoch) + ", batch " + std::to_string(b);
      out.scalars = work.stats;  // undefined on the CPU
      // The position moves here, not at after_update: on a GPU that runs
      // at the read, after later steps' forward passes.
      ++I.step;
      ++I.batch_in_epoch;
      return out;
    }
    void after_update(int64_t s, const Output& out, const UpdateResult& u) override {
      I.losses.push_back(out.loss);
      sum.last_loss = out.loss;
      grad_norm = u.grad_norm;
      last_lr = out.lr;
      bar.update(s - first_step, {{"loss", out.loss}, {"lr", out.lr}});
    }
    std::vector<std::pair<std::string, double>> log_scalars(int64_t) override {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double ips =
          secs > 0 ? static_cast<double>((I.batch_in_epoch - first_batch) * I.o.batch_size) / secs : 0.0;
      Scalars sc{{"epoch", I.epoch + static_cast<double>(I.batch_in_epoch) / steps_per_epoch},
                 {"loss", sum.last_loss},
                 {"lr", last_lr},
                 {"grad_norm", grad_norm},
                 {"img_per_s", ips}};
      if (I.o.compute.device.is_cuda())  // GPU runs: the caching allocator's high-water mark
        sc.emplace_back("gpu_peak_gib", static_cast<double>(cuda_peak_bytes_in_use()) / (1 << 30));
      return I.with_mechanism_scalars(std::move(sc));
    }
    void save(const std::string& why) override {
      I.save(why);
      saved_now = true;
    }
    // CUDA Graph steps: forward_backward's GPU step of one process in three
    // parts (several ranks mix the global batch on the host: eager steps).
    bool splits_step() const override { return work.upload != nullptr && dist().world() == 1; }
    Output prepare_step(int64_t, std::string* why) override {
      if (!work.upload->next(work.device_batch)) throw std::logic_error("vtrain: the loader ran dry inside an epoch");
      augment_batch(work.device_batch.images, work.device_batch.plans, work);
      evaluated_now = saved_now = false;
      const int64_t b = I.batch_in_epoch;
      Output out;
      out.lr = lr_at(I.o.sched, I.epoch, b, steps_per_epoch);
      I.prepare_split(b, work, why);
      out.loss = std::numeric_limits<double>::quiet_NaN();  // filled at the read
      out.where = "epoch " + std::to_string(I.epoch) + ", batch " + std::to_string(b);
      out.scalars = work.stats;
      return out;
    }
    void device_step() override { I.device_body(work); }
    void finish_step() override {
      work.upload->prefetch();  // the next batch's copy overlaps this step
      ++I.step;
      ++I.batch_in_epoch;
    }
  };

  // data.on_corrupt=skip: the loader warns once per file as it meets it;
  // this adds the running totals to the log and metrics.jsonl.
  void report_skipped(const Loader& loader) {
    if (o.on_corrupt != "skip") return;
    // Files, not loads: one bad file is met again every epoch, and a
    // replacement that is itself unreadable is one more retry.
    const int64_t n = loader.corrupt_count();
    const size_t files = loader.corrupt_names().size();
    if (files > 0) log().warn("data: {} unreadable files skipped so far in training ({} loads replaced)", files, n);
    run->write_metrics(step, {{"epoch", static_cast<double>(epoch)}, {"corrupt_skipped", static_cast<double>(n)},
                              {"corrupt_files", static_cast<double>(files)}},
                       {{"split", "data"}}, "data");
  }

  [[noreturn]] void stop_in_final_evaluation(int sig, const std::string& label, bool saved) {
    if (dist().is_root())
      log().warn("{} received during the final evaluation ({}, step {}): evaluation left unfinished and not "
                 "recorded{}",
                 signal_name(sig), label, step, saved ? " (its checkpoint is written)" : ", writing a checkpoint");
    if (!saved) {
      run->set_retry_checkpoint_write(false);  // the run ends here: a failed write is an error
      save("stop: " + signal_name(sig));
    }
    throw StopRequested(sig, step, run->last_checkpoint());
  }

  // Model and (when on) EMA: the EMA is evaluated by swapping its values
  // into the model's weights and back (exact copies, so training is untouched).
  std::pair<EvalResult, EvalResult> evaluate_all(const FinalEval* final = nullptr) {
    std::pair<EvalResult, EvalResult> r;
    int stopped = 0;
    r.first = evaluate("val", final, &stopped);
    if (stopped) stop_in_final_evaluation(stopped, "val", final->saved);
    if (o.ema && o.eval_ema) {
      Tensor keep = model->params().weights().clone();
      Tensor w = model->params().weights();  // a view sharing the flat buffer
      w.copy_from(opt->ema());
      model->params().refresh_bf16();  // the bf16 GEMM copy follows (precision: bf16)
      r.second = evaluate("val_ema", final, &stopped);
      w.copy_from(keep);
      model->params().refresh_bf16();
      // After the trained weights are back: the stop checkpoint holds them.
      if (stopped) stop_in_final_evaluation(stopped, "val_ema", final->saved);
    }
    if (r.first.top1 > best_top1) best_top1 = r.first.top1, best_step = step;
    return r;
  }
};

Trainer::Trainer(const Config& cfg, const std::string& config_path) : impl_(std::make_unique<Impl>()) {
  Impl& I = *impl_;
  // Absolute paths: the config saved into the run directory (and its
  // digest in checkpoints) then means the same from any directory.
  I.cfg = with_absolute_trainer_paths(cfg, config_path);
  I.o = train_options(I.cfg, config_path);
  record_architecture(I.cfg, I.o);  // config.yaml shows the model that trains
  TrainOptions& o = I.o;
  if (o.threads > 0) omp_set_num_threads(o.threads);
  if (!fs::is_directory(o.data_root)) throw std::runtime_error(missing_data_root_message(cfg, "data.root", config_path));
  I.train_ds = open_split(o, "data.train_split", o.train_split, train_pipeline(o));
  I.val_ds = open_split(o, "data.val_split", o.val_split, deit_eval_pipeline(o));
  if (I.train_ds->num_classes() != I.val_ds->num_classes())
    throw std::runtime_error("data.val_split '" + o.val_split + "' has " + std::to_string(I.val_ds->num_classes()) +
                             " classes but data.train_split '" + o.train_split + "' has " +
                             std::to_string(I.train_ds->num_classes()));
  // Labels are class-folder positions: evaluation means something only when
  // both splits have the same class folders (as veval top1 checks).
  if (split_classes(*I.train_ds) != split_classes(*I.val_ds)) {
    const auto& tc = split_classes(*I.train_ds);
    const auto& vc = split_classes(*I.val_ds);
    size_t i = 0;
    while (i < tc.size() && i < vc.size() && tc[i] == vc[i]) ++i;
    throw std::runtime_error("data.val_split '" + o.val_split + "' has other class folders than data.train_split '" +
                             o.train_split + "' (first difference at class " + std::to_string(i) + ": '" +
                             (i < vc.size() ? vc[i] : std::string()) + "' vs '" + (i < tc.size() ? tc[i] : std::string()) +
                             "'): labels would not match");
  }
  // data.on_corrupt=skip fills an unreadable image with the next readable
  // one: a class with no readable image at all would train on other
  // classes' images without a word (warned once the run directory is open).
  std::vector<std::string> data_warnings;
  if (o.on_corrupt == "skip")
    for (const auto& [key, ds] : {std::pair<const char*, const Dataset*>{"data.train_split", I.train_ds.get()},
                                  {"data.val_split", I.val_ds.get()}})
      for (const std::string& c : split_unreadable_classes(*ds))
        data_warnings.push_back("data: no image of class '" + c + "' in " + key + " '" + split_dir(*ds) +
                                "' can be read (data.on_corrupt=skip: training fills them with other classes' images, "
                                "evaluation leaves the class out)");
  if (o.vit.num_classes == 0) o.vit.num_classes = I.train_ds->num_classes();
  if (o.vit.num_classes < I.train_ds->num_classes())
    throw ConfigError("model.num_classes = " + std::to_string(o.vit.num_classes) + " but the data has " +
                      std::to_string(I.train_ds->num_classes()) + " classes");
  const int world = dist().world();
  if (o.batch_size % world != 0)
    throw ConfigError("train.batch_size = " + std::to_string(o.batch_size) + " (the global batch) is not divisible by the " +
                      std::to_string(world) + " processes of this run");
  I.rank_batch = o.batch_size / world;
  if (o.decode_on_device && o.compute.device.is_cuda() && world > 1 && o.mixing())
    throw ConfigError("data.decode_on=device: a GPU run of " + std::to_string(world) +
                      " processes mixes the global batch on the host before its upload (Mixup/CutMix pairs span "
                      "ranks), which needs the batch decoded and augmented there: use data.decode_on=host");
#if !VT_NVJPEG
  if (o.decode_on_device)
    throw ConfigError("data.decode_on=device: this build has no nvJPEG decoding (data_pipeline/device is built "
                      "when CMake finds nvjpeg.h and libnvjpeg; scripts/setup.sh fetches them): use data.decode_on=host");
#endif
  if (o.augment_on_device && o.compute.device.is_cuda() && world > 1 && o.mixing() && o.augment_on_auto)
    o.augment_on_device = false;  // auto: the global batch is mixed on the host (below)
  if (o.augment_on_device && o.compute.device.is_cuda() && world > 1 && o.mixing())
    throw ConfigError("data.augment_on=device: a GPU run of " + std::to_string(world) +
                      " processes mixes the global batch on the host before its upload (Mixup/CutMix pairs span "
                      "ranks), which needs the batch augmented there: use data.augment_on=host");
  size_t epoch_samples = 0;
  try {
    epoch_samples = I.make_order(0, 0, 1).size();
  } catch (const std::invalid_argument& e) {
    // RASampler keeps n // 256 * 256 samples: small datasets get none.
    if (o.repeated_aug <= 1) throw;
    throw ConfigError("data.repeated_aug = " + std::to_string(o.repeated_aug) + ": an epoch of data.train_split '" +
                      o.train_split + "' (" + std::to_string(I.train_images()) +
                      " images) would be empty: repeated augmentation keeps n // 256 * 256 samples; "
                      "use data.repeated_aug=1 (plain shuffle) for fewer than 256 images");
  }
  if (world > 1 && I.make_order(0, world - 1, world).size() < static_cast<size_t>(I.rank_batch))
    throw ConfigError("train.batch_size = " + std::to_string(o.batch_size) + ": an epoch split over " +
                      std::to_string(world) + " processes holds fewer than one batch of " +
                      std::to_string(I.rank_batch) + " per process");
  if (epoch_samples < static_cast<size_t>(o.batch_size))
    throw ConfigError("train.batch_size = " + std::to_string(o.batch_size) + " exceeds the " +
                      std::to_string(epoch_samples) + " samples of an epoch of data.train_split '" + o.train_split +
                      "'" + (o.repeated_aug > 1 ? " (data.repeated_aug = " + std::to_string(o.repeated_aug) + ")" : ""));

  apply_device_choice(o.compute);
  I.model = std::make_unique<VisionTransformer>(o.vit);
  I.model->init(o.seed);
  if (o.compute.device.is_cuda())  // refused before the first GPU allocation when the step cannot fit
    check_gpu_memory_before_step({I.model->backbone().config(), I.model->params().numel(), I.rank_batch,
                                  o.vit.tokens(), o.compute.bf16(), o.ema, o.activation_checkpointing},
                                 o.compute.device.index);
  // Initialised on the host (Philox draws written through host pointers),
  // then moved: a GPU run starts from the CPU run's exact weights.
  I.model->to(o.compute.device);
  if (o.compute.bf16()) I.model->params().enable_bf16_copy();
  // Drop-path masks keyed by the global row (rank r's row j is j * world + r).
  I.model->backbone().set_sample_keys(dist().rank(), world);
  I.model->backbone().set_activation_checkpointing(o.activation_checkpointing);
  I.opt = std::make_unique<OptimizerState>(I.model->params(), o.ema);
  I.nonfinite = NonFiniteGuard(o.max_nonfinite);
  // The checkpoint to resume from is read (and validated) before anything is written.
  I.run = std::make_unique<RunDirectory>(o.out_dir, o.name, o.resume);
  for (const std::string& w : data_warnings) I.run->warn(w);
  if (o.preset_overridden_elsewhere) I.run->warn(o.preset_overrides);
  if (!I.run->resume_path().empty()) I.restore(load_checkpoint(I.run->resume_path()), I.run->resume_path());
}

Trainer::~Trainer() = default;
const std::vector<double>& Trainer::losses() const { return impl_->losses; }
const TrainOptions& Trainer::options() const { return impl_->o; }

TrainSummary Trainer::run() {
  Impl& I = *impl_;
  I.run->open(I.cfg, I.o.tensorboard, I.step);
  try {
    return I.loop();
  } catch (const StopRequested& e) {
    if (dist().is_root()) log().warn("vtrain: {}", e.what());
    I.run->close();
    throw;
  } catch (const std::exception& e) {
    // main() prints the error on stderr; the run's log must hold it too.
    I.run->close_with_error(std::string("vtrain: run failed: ") + e.what());
    throw;
  }
}

TrainSummary Trainer::Impl::loop() {
  Impl& I = *this;
  const TrainOptions& o = I.o;
  VisionTransformer& model = *I.model;
  ParamStore& ps = model.params();
  // The input path a run takes is stated up front (data.format, data.decode,
  // data.augment_on).
  log().info("vtrain: device {} | input: {} ({}), decode {}, {}", o.compute.describe(),
             o.data_format == "shards" ? "packed shards" : "image folder", o.data_root,
             o.decode_on_device ? "on the device (nvJPEG, whole images; non-JPEG files and what nvJPEG refuses on the host)"
             : o.decode == DecodeMode::Crop ? "crop (region at the crop's DCT scale)" : "full",
             !o.augment_on_device ? std::string("augmentation on the host")
             : o.compute.device.is_cuda()
                 ? "augmentation on the device (uint8 crops + plans uploaded, CUDA kernels)"
                 : "augmentation on the device path (uint8 crops + plans, its CPU twins on " + o.compute.device.str() + ")");
  log().info("vtrain: run {} | {} {} dim {} depth {} heads {} patch {} img {} | {} params | train {} images, val {}, {} classes",
             I.run->path(), o.preset, norm_scheme_name(o.vit.backbone.scheme), o.vit.backbone.dim, o.vit.backbone.depth,
             o.vit.backbone.heads, o.vit.patch_size, o.vit.img_size, ps.numel(), I.train_images(), I.val_ds->size(),
             I.train_ds->num_classes());
  // Keys given over model.preset (a warning at construction when they come
  // from elsewhere than the preset).
  if (!o.preset_overrides.empty() && !o.preset_overridden_elsewhere) log().info("vtrain: {}", o.preset_overrides);
  log().info("batch {} ({} processes x {}) lr {:.3g} epochs {} | {} threads, {} loader workers{}", o.batch_size,
             dist().world(), I.rank_batch, o.lr, o.epochs, omp_get_max_threads(), o.workers,
             I.run->resume_path().empty() ? std::string() : " | resumed from " + I.run->resume_path());

  LoaderConfig lc;
  lc.batch_size = static_cast<int>(I.rank_batch);
  lc.workers = o.workers;
  lc.prefetch = o.prefetch;
  lc.drop_last = true;
  lc.seed = o.seed;
  lc.on_corrupt = parse_on_corrupt(o.on_corrupt);
  lc.pinned_slots = o.compute.device.is_cuda();  // uploaded from pinned slots
  lc.augment_plans = o.augment_on_device;        // the step applies them (forward_backward)
  lc.encoded = o.decode_on_device;               // the uploader's decode hook decodes them (below)
  const Device dev = o.compute.device;
#if VT_NVJPEG
  // data.decode_on=device (declared first: outlives the loader and the uploader).
  std::unique_ptr<DeviceBatchDecoder> decoder;
  if (o.decode_on_device && !dev.is_cpu()) {
    decoder = std::make_unique<DeviceBatchDecoder>(dev.index);
    log().info("vtrain: nvJPEG {} backend", decoder->hardware() ? "hardware (JPEG engines)" : "CUDA");
    // JPEGs nvJPEG does not take (by their markers) are decoded by the
    // workers, not by the decoder's host fallback on this thread.
    lc.device_decodes = decoder->worker_filter();
  }
#endif
  Loader loader(I.train_ds, lc);

  StepWork work;
  work.mix.mixup_alpha = o.mixup_alpha, work.mix.cutmix_alpha = o.cutmix_alpha;
  work.mix.prob = o.mixup_prob, work.mix.switch_prob = o.mixup_switch_prob;
  work.mix.label_smoothing = o.label_smoothing;
  work.mix.num_classes = static_cast<int>(o.vit.num_classes);
  work.augment = augment_settings(train_pipeline(o));
  LoopOptions lo;
  lo.log_every_steps = o.log_every_steps;
  lo.ckpt_every_steps = o.ckpt_every_steps;
  // As timm's train_one_epoch: also the last batch of an epoch (and of
  // train.max_steps), so every run's metrics end with its last loss.
  lo.log_at_end = true;
  lo.allreduce_bucket_mb = o.allreduce_bucket_mb;
  lo.cuda_graph = o.cuda_graph;
  lo.cluster = o.cluster;
  AdamWParams& hp = lo.update.adamw;
  hp.beta1 = o.beta1, hp.beta2 = o.beta2, hp.eps = o.adam_eps, hp.weight_decay = o.weight_decay;
  lo.update.clip_grad = o.clip_grad;
  if (o.ema) lo.update.ema_decay = static_cast<float>(o.ema_decay);
  TrainLoop loop(ps, *I.opt, I.nonfinite, *I.run, lo);
  const int64_t B = I.rank_batch, K = o.vit.num_classes;
  work.logits = Tensor::empty({B, K}, DType::F32, dev), work.dlogits = Tensor::empty({B, K}, DType::F32, dev);
  work.targets = Tensor::empty({B, K}, DType::F32, dev);
  // GPU: batch b + 1 is copied on the upload stream while step b runs; a
  // global batch over several ranks is mixed on the host before its copy.
  int64_t epoch_first_batch = I.batch_in_epoch;  // the loader's batch 0 in this epoch
  std::unique_ptr<BatchUploader> upload;
  if (!dev.is_cpu()) {
    BatchUploader::Prepare prepare;
    if (o.mixing() && dist().world() > 1)
      prepare = [&I, &work, &epoch_first_batch, B, K](Batch& batch) {
        const int64_t b = epoch_first_batch + batch.index;
        Philox rng(I.o.seed, philox_stream(kPurposeTrainMix, static_cast<uint64_t>(I.epoch), static_cast<uint64_t>(b)));
        batch.targets = Tensor::empty({B, K});
        I.mix_global_batch(batch, rng, work, batch.targets);
      };
    BatchUploader::Decode decode;
#if VT_NVJPEG
    if (decoder) decode = decoder->uploader_hook(loader);
#endif
    upload = std::make_unique<BatchUploader>(loader, dev, std::move(prepare), std::move(decode));
    work.upload = upload.get();
    work.stats = Tensor::zeros({2}, DType::F32, dev);
  }
  // data.decode_on=device: where the images were decoded, at each epoch's
  // end and at a stop within one (files nvJPEG refused or failed are
  // decoded on the host: device_jpeg.h).
  auto log_decode_counts = [&] {
#if VT_NVJPEG
    if (!decoder) return;
    const DeviceBatchDecoder::Counts& n = decoder->counts();
    log().info("data.decode_on=device, so far: {} images by nvJPEG ({}), {} by the host decoder after nvJPEG "
               "refused or failed them ({} failed), {} host crops (non-JPEG files, JPEGs nvJPEG does not take, "
               "replacements)",
               n.nvjpeg_hardware + n.nvjpeg_cuda, decoder->hardware() ? "hardware" : "CUDA", n.host_fallback,
               n.nvjpeg_failed, n.host_crops);
#endif
  };
  TrainSummary sum;
  std::pair<EvalResult, EvalResult> last_eval;
  bool evaluated_now = false, saved_now = false;
  bool stop = false;
  const int64_t first_step = I.step;  // a rerun of a finished run trains nothing

  while (I.epoch < o.epochs && !stop) {
    EpochOrder order = I.make_order(static_cast<uint64_t>(I.epoch));
    const int64_t steps_per_epoch = I.steps_per_epoch(static_cast<uint64_t>(I.epoch));
    // Resuming mid-epoch: drop the batches already trained on; augmentation
    // keys travel with the draw ids, Mixup is keyed by the batch index below.
    const size_t skip = static_cast<size_t>(std::min(I.batch_in_epoch, steps_per_epoch) * B);
    order.indices.erase(order.indices.begin(), order.indices.begin() + static_cast<ptrdiff_t>(skip));
    order.draw_ids.erase(order.draw_ids.begin(), order.draw_ids.begin() + static_cast<ptrdiff_t>(skip));
    if (upload) upload->discard();  // the last epoch's end-of-epoch marker
    epoch_first_batch = I.batch_in_epoch;
    loader.start_epoch(static_cast<uint64_t>(I.epoch), std::move(order));
    ProgressOptions po;
    po.items_per_step = static_cast<double>(o.batch_size);
    if (!dist().is_root()) po.out = nullptr;  // rank 0 reports
    po.unit = "img";
    po.interval_s = o.log_every_s;
    // This epoch's remaining batches, or up to train.max_steps: the bar and
    // its ETA count to where this epoch's training really ends.
    int64_t end = I.step + std::max<int64_t>(0, steps_per_epoch - I.batch_in_epoch);
    if (o.max_steps) end = std::min(end, *o.max_steps);
    ProgressBar bar("epoch " + std::to_string(I.epoch + 1) + "/" + std::to_string(o.epochs),
                    std::max<int64_t>(0, end - I.step), po);
    EpochSteps steps(I, loader, work, bar, steps_per_epoch, saved_now, evaluated_now, sum);
    loop.run(steps, I.step, end);
    stop = o.max_steps && I.step >= *o.max_steps;
    bar.finish();
    if (stop && I.batch_in_epoch < steps_per_epoch) {
      log_decode_counts();
      I.report_skipped(loader);
      break;
    }
    // Epoch done.
    log_decode_counts();
    ++I.epoch;
    I.batch_in_epoch = 0;
    I.report_skipped(loader);
    const bool last = I.epoch >= o.epochs;
    if (last) {
      // A checkpoint written at this step already (ckpt.every_steps) holds
      // the trained state; the epoch's own comes after the evaluation.
      const Impl::FinalEval fin{saved_now};
      last_eval = I.evaluate_all(&fin), evaluated_now = true;
    } else if (o.eval_every_epochs > 0 && I.epoch % o.eval_every_epochs == 0) {
      last_eval = I.evaluate_all(), evaluated_now = true;
    }
    const bool epoch_saved = last || (o.ckpt_every_epochs > 0 && I.epoch % o.ckpt_every_epochs == 0);
    if (epoch_saved) I.save("epoch " + std::to_string(I.epoch)), saved_now = true;
    if (stop || last) break;
    // A stop requested during the epoch's last step or its evaluation: the
    // evaluation is recorded, the checkpoint holds the epoch's end (the
    // next epoch's position and best top-1; it replaces a periodic
    // checkpoint of the same step, written before the evaluation).
    loop.check_stop(steps, I.step, epoch_saved);
  }
  if (!evaluated_now) {
    // A finished run evaluated again: its checkpoint holds this state.
    const Impl::FinalEval fin{saved_now || (I.step == first_step && !I.run->last_checkpoint().empty())};
    last_eval = I.evaluate_all(&fin);
  }
  // Re-evaluating a finished run leaves its checkpoint (and the digest in
  // its state.json, the record of how the weights were trained) alone.
  if (!saved_now && (I.step != first_step || I.run->last_checkpoint().empty())) I.save("end");
  sum.steps = I.step;
  sum.final_eval = last_eval.first;
  sum.final_eval_ema = last_eval.second;
  sum.best_top1 = I.best_top1;
  sum.best_step = I.best_step;
  sum.run_dir = I.run->path();
  sum.last_checkpoint = I.run->last_checkpoint();
  log().info("done: {} steps, {} epochs | final top-1 {:.2f}% top-5 {:.2f}%{} | best top-1 {:.2f}% (step {}) | {}",
             I.step, I.epoch, last_eval.first.top1, last_eval.first.top5,
             o.ema && o.eval_ema ? fmt::format(" | EMA top-1 {:.2f}%", last_eval.second.top1) : std::string(),
             I.best_top1, I.best_step, I.run->last_checkpoint());
  if (o.compute.device.is_cuda())
    log().info("peak GPU memory {:.1f} MiB (caching allocator, in use)",
               static_cast<double>(cuda_peak_bytes_in_use()) / (1 << 20));
  I.run->close();
  return sum;
}

}  // namespace vt
