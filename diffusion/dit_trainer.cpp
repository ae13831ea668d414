#include "diffusion/dit_trainer.h"

#include <chrono>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/npz.h"
#include "core/philox.h"
#include "core/progress.h"
#include "core/tensorboard/event_writer.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/loader.h"
#include "data_pipeline/sampler.h"
#include "core/checkpoint_dir.h"
#include "diffusion/gaussian_diffusion.h"
#include "diffusion/image_grid.h"
#include "vae/autoencoder_kl.h"
#include "diffusion/sampler.h"
#include "kernels/elementwise.h"
#include "kernels/optim.h"

namespace vt {
namespace fs = std::filesystem;
namespace {
constexpr uint64_t kPurposeTimestep = 0xD1F70002, kPurposeNoise = 0xD1F70003, kPurposeSampleLabels = 0xD1F70004;

std::map<std::string, Tensor> named_views(const ParamStore& store, const Tensor& flat, const std::string& prefix) {
  std::map<std::string, Tensor> m;
  for (const auto& p : store.infos()) m[prefix + p.name] = flat.slice(0, p.offset, p.offset + p.numel).view(p.shape);
  return m;
}

void load_named(const ParamStore& store, const std::map<std::string, Tensor>& src, const Tensor& flat,
                const std::string& prefix, const std::string& what) {
  for (const auto& p : store.infos()) {
    auto it = src.find(prefix + p.name);
    if (it == src.end()) throw std::runtime_error(what + ": missing tensor '" + prefix + p.name + "'");
    if (it->second.numel() != p.numel)
      throw std::runtime_error(what + ": '" + prefix + p.name + "' has shape " + shape_str(it->second.shape()) +
                               ", the model has " + shape_str(p.shape));
    flat.slice(0, p.offset, p.offset + p.numel).copy_from(it->second.to(DType::F32).contiguous().view({p.numel}));
  }
}

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
    : cfg_(cfg), diff_(GaussianDiffusion::linear(cfg.num_timesteps)) {
  // Every check (data, model, resume) runs before anything is written, so a
  // setup failure leaves no directory that looks like a run (open_run).
  run_dir_ = (fs::path(cfg_.out_dir) / cfg_.run_name).string();
  if (!fs::is_directory(cfg_.data_root))
    throw std::runtime_error("data.root '" + cfg_.data_root + "' does not exist or is not a directory");
  dataset_ = make_dataset(cfg_);
  if (dataset_->num_classes() > cfg_.model.num_classes)
    throw ConfigError("model.num_classes: the data has " + std::to_string(dataset_->num_classes()) +
                      " classes, the model " + std::to_string(cfg_.model.num_classes));
  batches_per_epoch_ = dataset_->size() / cfg_.batch;
  if (batches_per_epoch_ == 0)
    throw ConfigError("train.global_batch: " + std::to_string(cfg_.batch) + " exceeds the " +
                      std::to_string(dataset_->size()) + " samples of " + cfg_.data_root);

  model_ = std::make_unique<DiT>(store_, cfg_.model);
  store_.finalize();
  model_->init_weights(cfg_.seed);
  ema_ = store_.weights().clone();  // DiT: EMA starts as a copy
  exp_avg_ = Tensor::zeros(store_.weights().shape());
  exp_avg_sq_ = Tensor::zeros(store_.weights().shape());
  std::vector<DecaySegment> segs;
  for (const auto& p : store_.infos()) segs.push_back({p.offset, p.numel, p.weight_decay});
  decay_mask_ = decay_mask_from_segments(store_.numel(), segs);

  if (cfg_.resume == "auto") {
    if (auto l = latest_checkpoint(run_dir_)) resume_dir_ = *l;
  } else if (cfg_.resume == "never" || cfg_.resume == "none") {
    // Training step 1.. over an old run's step_<N> would leave a mix of both.
    if (!list_checkpoints(run_dir_).empty())
      throw std::runtime_error("resume=never but run directory '" + run_dir_ +
                               "' already holds checkpoints; choose another name or resume=auto");
  } else {
    resume_dir_ = cfg_.resume;
  }
  if (!resume_dir_.empty()) resume_from(resume_dir_);

  LoaderConfig lc;
  lc.batch_size = static_cast<int>(cfg_.batch);
  lc.workers = std::max(1, cfg_.workers);
  lc.seed = cfg_.seed;
  lc.on_corrupt = parse_on_corrupt(cfg_.on_corrupt);
  loader_ = std::make_unique<Loader>(dataset_, lc);

  const int64_t B = cfg_.batch, C = cfg_.model.in_channels, S = cfg_.model.input_size;
  x0_ = Tensor::empty({B, C, S, S});
  xt_ = Tensor::empty({B, C, S, S});
  noise_ = Tensor::empty({B, C, S, S});
  tt_ = Tensor::empty({B});
  y_ = Tensor::empty({B}, DType::I32);
  out_ = Tensor::empty({B, 2 * C, S, S});
  dout_ = Tensor::empty({B, 2 * C, S, S});
}

void DitTrainer::open_run() {
  if (opened_) return;
  fs::create_directories(run_dir_);
  log_to_file((fs::path(run_dir_) / "log.txt").string());
  opened_ = true;
  write_file_atomic((fs::path(run_dir_) / "config.yaml").string(), cfg_.yaml);
  metrics_ = std::make_unique<MetricsWriter>((fs::path(run_dir_) / "metrics.jsonl").string());
  tb_ = std::make_unique<TensorBoardWriter>(run_dir_);
  log().info("dittrain: DiT depth {} hidden {} patch {} ({} scheme), {} parameters, {} samples, batch {}, run dir {}{}",
             cfg_.model.depth, cfg_.model.hidden, cfg_.model.patch, norm_scheme_name(cfg_.model.scheme),
             model_->num_params(), dataset_->size(), cfg_.batch, run_dir_,
             resume_dir_.empty() ? "" : ", resumed from " + resume_dir_ + " at step " + std::to_string(step_));
}

DitTrainer::~DitTrainer() {
  if (opened_) log_close_file();
}


void DitTrainer::resume_from(const std::string& dir) {
  CheckpointLoadOptions lo;
  lo.require_ema = true;
  const CheckpointData ck = load_checkpoint(dir, lo);
  store_.load(ck.model, /*strict=*/true);
  model_->set_pos_embed();
  load_named(store_, ck.ema, ema_, "", "checkpoint '" + dir + "' ema.safetensors");
  load_named(store_, ck.optimizer, exp_avg_, "exp_avg.", "checkpoint '" + dir + "' optimizer.safetensors");
  load_named(store_, ck.optimizer, exp_avg_sq_, "exp_avg_sq.", "checkpoint '" + dir + "' optimizer.safetensors");
  try {
    step_ = ck.state.at("step").get<int64_t>();
    opt_steps_ = ck.state.at("optimizer_steps").get<int64_t>();
    epoch_ = ck.state.at("epoch").get<int64_t>();
    batch_in_epoch_ = ck.state.at("batch_in_epoch").get<int64_t>();
    nonfinite_total_ = ck.state.value("nonfinite_skipped", int64_t{0});
    if (ck.state.value("seed", uint64_t{0}) != cfg_.seed)
      log().warn("resume: checkpoint seed {} differs from seed {}", ck.state.value("seed", uint64_t{0}),
                 cfg_.seed);
    if (ck.state.value("config_digest", std::string()) != cfg_.digest)
      log().warn("resume: the configuration differs from the checkpoint's (digest {} vs {})",
                 ck.state.value("config_digest", std::string()), cfg_.digest);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("checkpoint '" + dir + "': state.json: " + e.what());
  }
}

std::string DitTrainer::save_checkpoint() {
  open_run();
  CheckpointData ck;
  ck.model = store_.state_dict();
  ck.ema = named_views(store_, ema_, "");
  ck.optimizer = named_views(store_, exp_avg_, "exp_avg.");
  for (auto& kv : named_views(store_, exp_avg_sq_, "exp_avg_sq.")) ck.optimizer.insert(kv);
  ck.state = {{"step", step_},
              {"optimizer_steps", opt_steps_},
              {"epoch", epoch_},
              {"batch_in_epoch", batch_in_epoch_},
              {"seed", cfg_.seed},
              {"config_digest", cfg_.digest},
              {"nonfinite_skipped", nonfinite_total_},
              {"model", "DiT"},
              {"scheme", norm_scheme_name(cfg_.model.scheme)}};
  // vt:: because this member hides the free function.
  const std::string dir = vt::save_checkpoint(run_dir_, step_, ck);
  remove_stale_checkpoint_temps(run_dir_);
  log().info("checkpoint {}", dir);
  return dir;
}

void DitTrainer::start_epoch() {
  EpochOrder full = train_order(dataset_->size(), cfg_.seed, static_cast<uint64_t>(epoch_), 0, 1);
  EpochOrder o;
  const size_t skip = static_cast<size_t>(batch_in_epoch_ * cfg_.batch);
  o.indices.assign(full.indices.begin() + static_cast<std::ptrdiff_t>(std::min(skip, full.size())), full.indices.end());
  o.draw_ids.assign(full.draw_ids.begin() + static_cast<std::ptrdiff_t>(std::min(skip, full.size())),
                    full.draw_ids.end());
  loader_->start_epoch(static_cast<uint64_t>(epoch_), std::move(o));
}

bool DitTrainer::train_step() {
  const int64_t s = step_ + 1, B = cfg_.batch, N = x0_.numel() / B;
  Batch batch;
  if (!loader_->next(batch)) throw std::logic_error("dittrain: loader ran dry inside an epoch");
  x0_.copy_from(batch.images);
  if (cfg_.data_kind == "latents") scale(x0_, static_cast<float>(cfg_.latent_scale), x0_);
  y_.copy_from(batch.labels);
  drop_labels(y_, cfg_.model.class_dropout, cfg_.model.num_classes, cfg_.seed, static_cast<uint64_t>(s));
  std::vector<int> t(static_cast<size_t>(B));
  {
    Philox rng(cfg_.seed, philox_stream(kPurposeTimestep, static_cast<uint64_t>(s)));
    for (int64_t b = 0; b < B; ++b) {
      t[static_cast<size_t>(b)] = static_cast<int>(rng.integer(0, cfg_.num_timesteps - 1));
      tt_.f32()[b] = static_cast<float>(t[static_cast<size_t>(b)]);
    }
  }
#pragma omp parallel for schedule(static)
  for (int64_t b = 0; b < B; ++b) {
    Philox rng(cfg_.seed, philox_stream(kPurposeNoise, static_cast<uint64_t>(s), static_cast<uint64_t>(b)));
    float* z = noise_.f32() + b * N;
    for (int64_t i = 0; i < N; ++i) z[i] = static_cast<float>(rng.normal());
  }
  const GaussianDiffusion& diff = diff_;
  diff.q_sample(x0_, t, noise_, xt_);
  model_->forward(xt_, tt_, y_, out_);
  const auto L = diff.training_losses(out_, x0_, xt_, noise_, t, dout_, cfg_.t0_term);
  store_.zero_grad();
  model_->backward(dout_);
  const double gnorm = cfg_.grad_clip > 0 ? clip_grad_norm(store_.grads(), cfg_.grad_clip) : grad_norm(store_.grads());

  if (++batch_in_epoch_ == batches_per_epoch_) {
    ++epoch_;
    batch_in_epoch_ = 0;
    start_epoch();
  }
  step_ = s;
  if (!std::isfinite(L.mean) || !std::isfinite(gnorm)) {
    ++nonfinite_total_;
    log().warn("step {}: non-finite loss {} / grad norm {}; update skipped", s, L.mean, gnorm);
    if (++consecutive_nonfinite_ >= cfg_.max_nonfinite)
      throw std::runtime_error("dittrain: " + std::to_string(consecutive_nonfinite_) +
                               " consecutive non-finite steps (train.max_nonfinite); stopping at step " +
                               std::to_string(s));
    losses_.emplace_back(s, L.mean);
    return false;
  }
  consecutive_nonfinite_ = 0;
  AdamWParams hp;
  hp.lr = cfg_.lr;
  hp.beta1 = cfg_.beta1;
  hp.beta2 = cfg_.beta2;
  hp.eps = cfg_.adam_eps;
  hp.weight_decay = cfg_.weight_decay;
  adamw_step(store_.weights(), store_.grads(), exp_avg_, exp_avg_sq_, hp, ++opt_steps_, decay_mask_);
  ema_update(ema_, store_.weights(), static_cast<float>(cfg_.ema_decay));
  losses_.emplace_back(s, L.mean);
  double mse = 0, vb = 0;
  for (size_t b = 0; b < L.mse.size(); ++b) mse += L.mse[b], vb += L.vb[b];
  acc_loss_ += L.mean, acc_mse_ += mse / B, acc_vb_ += vb / B, acc_gnorm_ += gnorm;
  ++acc_n_;
  return true;
}

void DitTrainer::save_sample_grid(const std::string& path) {
  ParamStore es;
  DiT ema_model(es, cfg_.model);
  es.finalize();
  Tensor w = es.weights();
  w.copy_from(ema_);
  std::vector<int32_t> labels(static_cast<size_t>(std::max(1, cfg_.grid_images)));
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % static_cast<size_t>(cfg_.model.num_classes));
  Tensor x = sample_images(ema_model, cfg_.grid, labels);
  if (cfg_.data_kind == "latents") scale(x, static_cast<float>(1.0 / cfg_.latent_scale), x);
  // Latent grids are decoded to images when a VAE is configured (vae.path).
  if (cfg_.data_kind == "latents" && !cfg_.vae_path.empty()) x = AutoencoderKL::load(cfg_.vae_path).decode(x);
  save_png_grid(path, to_uint8_nhwc(x));
}

void DitTrainer::train(int64_t stop_at) {
  open_run();
  const int64_t end = stop_at > 0 ? std::min(stop_at, cfg_.steps) : cfg_.steps;
  if (step_ >= end) {
    log().info("dittrain: already at step {} (target {})", step_, end);
    return;
  }
  start_epoch();
  ProgressOptions po;
  po.items_per_step = static_cast<double>(cfg_.batch);
  po.unit = "img";
  ProgressBar bar("train", end - step_, po);
  const int64_t first = step_;
  auto t_log = std::chrono::steady_clock::now();
  int64_t step_log = step_;
  while (step_ < end) {
    train_step();
    bar.update(step_ - first, {{"loss", losses_.back().second}});
    if (step_ % cfg_.log_every == 0 || step_ == end) {
      const auto now = std::chrono::steady_clock::now();
      const double dt = std::chrono::duration<double>(now - t_log).count();
      const double ips = dt > 0 ? static_cast<double>((step_ - step_log) * cfg_.batch) / dt : 0.0;
      t_log = now;
      step_log = step_;
      // Means over the steps since the last line: one batch's loss is noisy
      // (t is uniform, and the loss scale depends strongly on t).
      const double n = std::max<int64_t>(1, acc_n_);
      std::vector<std::pair<std::string, double>> sc = {
          {"loss", acc_loss_ / n}, {"mse", acc_mse_ / n}, {"vb", acc_vb_ / n}, {"grad_norm", acc_gnorm_ / n}};
      acc_loss_ = acc_mse_ = acc_vb_ = acc_gnorm_ = 0;
      acc_n_ = 0;
      sc.emplace_back("img_per_s", ips);
      sc.emplace_back("epoch", static_cast<double>(epoch_));
      sc.emplace_back("nonfinite_skipped", static_cast<double>(nonfinite_total_));
      metrics_->write(step_, sc);
      tb_->add_scalars(sc, step_);
      tb_->flush();
    }
    if (cfg_.sample_every > 0 && (step_ % cfg_.sample_every == 0 || step_ == cfg_.steps))
      save_sample_grid((fs::path(run_dir_) / "samples" / ("step_" + std::to_string(step_) + ".png")).string());
    if ((cfg_.ckpt_every > 0 && step_ % cfg_.ckpt_every == 0) || step_ == end) save_checkpoint();
  }
  bar.finish();
}

void dit_sample_to_files(const DitTrainConfig& cfg, const std::string& ckpt, int64_t num_samples,
                         const SampleOptions& opt, const std::string& out, bool use_ema) {
  if (num_samples < 1 || num_samples > kMaxSamples)
    throw std::invalid_argument("sample: num_samples must be in [1, " + std::to_string(kMaxSamples) + "], got " +
                                std::to_string(num_samples));
  if (opt.batch < 1) throw std::invalid_argument("sample: batch must be >= 1, got " + std::to_string(opt.batch));
  ParamStore store;
  DiT model(store, cfg.model);
  store.finalize();
  CheckpointLoadOptions lo;
  lo.optimizer = false;
  lo.require_ema = use_ema;
  const CheckpointData ck = load_checkpoint(ckpt, lo);
  store.load(use_ema ? ck.ema : ck.model, /*strict=*/true);
  model.set_pos_embed();
  std::vector<int32_t> labels(static_cast<size_t>(num_samples));
  Philox rng(opt.seed, philox_stream(kPurposeSampleLabels));
  for (auto& y : labels) y = static_cast<int32_t>(rng.integer(0, cfg.model.num_classes - 1));

  // Chunks of whole batches: only the output array (uint8 pixels, or F32
  // latents) is held for all samples, not N float images.
  const int64_t C = cfg.model.in_channels, S = cfg.model.input_size, bs = opt.batch;
  const int64_t chunk = bs * std::max<int64_t>(1, 1024 / bs);
  const bool latents = cfg.data_kind == "latents";
  NpyArray arr;
  arr.dtype = latents ? "<f4" : "|u1";
  arr.shape = latents ? Shape{num_samples, C, S, S} : Shape{num_samples, S, S, C};
  const size_t per_bytes = static_cast<size_t>(C * S * S) * (latents ? sizeof(float) : 1);
  arr.bytes.resize(static_cast<size_t>(num_samples) * per_bytes);
  const int64_t K = sampling_diffusion(opt).num_steps(), total = (num_samples + bs - 1) / bs * K;
  ProgressOptions po;
  po.unit = "step";
  ProgressBar pb("sample", total, po);
  int64_t done_before = 0;
  for (int64_t first = 0; first < num_samples; first += chunk) {
    const int64_t n = std::min(chunk, num_samples - first);
    const std::vector<int32_t> part(labels.begin() + first, labels.begin() + first + n);
    int64_t done_here = 0;
    Tensor x = sample_images(
        model, opt, part, [&](int64_t done, int64_t) { pb.update(done_before + (done_here = done)); }, first);
    done_before += done_here;
    Tensor o = latents ? x : to_uint8_nhwc(x);
    if (latents) scale(o, static_cast<float>(1.0 / cfg.latent_scale), o);
    std::memcpy(arr.bytes.data() + static_cast<size_t>(first) * per_bytes, o.contiguous().raw(),
                static_cast<size_t>(n) * per_bytes);
  }
  pb.finish();
  const int64_t shown = std::min<int64_t>(64, num_samples);
  Tensor preview;
  if (latents) {
    // Shown as if they were pixels (no VAE decoder yet): channels 0..2.
    Tensor lat = Tensor::empty({shown, C, S, S});
    std::memcpy(lat.raw(), arr.bytes.data(), static_cast<size_t>(shown) * per_bytes);
    preview = to_uint8_nhwc(lat);
  } else {
    preview = Tensor::empty({shown, S, S, C}, DType::U8);
    std::memcpy(preview.raw(), arr.bytes.data(), static_cast<size_t>(shown) * per_bytes);
  }
  std::map<std::string, NpyArray> arrays;
  arrays["labels"] = NpyArray::from(std::vector<int64_t>(labels.begin(), labels.end()), {num_samples});
  arrays[latents ? "latents" : "arr_0"] = std::move(arr);
  const fs::path parent = fs::path(out).parent_path();
  if (!parent.empty()) fs::create_directories(parent);
  save_npz(out + ".npz", arrays);
  save_png_grid(out + ".png", preview);
  log().info("sample: wrote {}.npz and {}.png ({} samples, {} {} steps, cfg {})", out, out, num_samples, opt.sampler,
             opt.steps, opt.cfg_scale);
}

}  // namespace vt
