#include "diffusion/dit_sample_files.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <map>
#include <stdexcept>

#include "core/checkpoint_dir.h"
#include "core/exit_status.h"
#include "core/log.h"
#include "core/out_of_memory.h"
#include "core/output_claim.h"
#include "core/npz.h"
#include "core/npz_stream_writer.h"
#include "core/philox.h"
#include "core/progress.h"
#include "core/stop_request.h"
#include "diffusion/fingerprint.h"
#include "diffusion/image_grid.h"
#include "diffusion/sample_partial.h"
#include "diffusion/vae_decode_samples.h"
#include "kernels/elementwise.h"
#include "train/run_dir.h"

namespace vt {
namespace fs = std::filesystem;
namespace {

constexpr uint64_t kPurposeSampleLabels = 0xD1F70004;  // kPurposeTimestep/kPurposeNoise: diffusion/dit_step.cpp

// The shortest text that reads back as x (0.1, not 0.10000000000000001).
std::string num(double x) {
  char b[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(b, sizeof b, "%.*g", prec, x);
    if (std::strtod(b, nullptr) == x) break;
  }
  return b;
}

std::string describe_model(const DiTConfig& m) {
  return "input_size " + std::to_string(m.input_size) + ", in_channels " + std::to_string(m.in_channels) + ", patch " +
         std::to_string(m.patch) + ", hidden " + std::to_string(m.hidden) + ", depth " + std::to_string(m.depth) +
         ", heads " + std::to_string(m.heads) + ", mlp_ratio " + num(m.mlp_ratio) + ", num_classes " +
         std::to_string(m.num_classes) + ", class_dropout " + num(m.class_dropout) + ", learn_sigma " +
         std::to_string(m.learn_sigma) + ", scheme " + norm_scheme_name(m.scheme) + ", normalized_input " +
         std::to_string(m.normalized_input) + ", depth_scaling " + std::to_string(m.depth_scaling) + ", mixln_alpha " +
         num(m.mixln_alpha) + ", spannorm_alpha " + (m.spannorm_alpha ? num(*m.spannorm_alpha) : std::string("auto"));
}

// The array the final npz holds besides `labels`, per sample.
struct OutputLayout {
  std::string key;    // "arr_0" | "latents"
  std::string dtype;  // "|u1" | "<f4"
  Shape row;          // [H, W, 3] | [C, h, w]
  size_t row_bytes() const { return static_cast<size_t>(shape_numel(row)) * (dtype == "|u1" ? 1 : 4); }
  std::string str() const { return key + " " + dtype + " " + shape_str(row); }
};

// VT_TEST_SAMPLE_KILL_AFTER_CHUNKS=K[:SIGNAL] (dit_sample_files.h).
void test_kill_after_chunk(int64_t written) {
  const char* spec = std::getenv("VT_TEST_SAMPLE_KILL_AFTER_CHUNKS");
  if (!spec || !*spec) return;
  const std::string s = spec;
  const size_t colon = s.find(':');
  if (std::atoll(s.substr(0, colon).c_str()) != written) return;
  const int sig = colon == std::string::npos ? SIGKILL : signal_number(s.substr(colon + 1));
  if (sig <= 0) throw std::invalid_argument("VT_TEST_SAMPLE_KILL_AFTER_CHUNKS=" + s + ": unknown signal");
  std::fprintf(stderr, "VT_TEST_SAMPLE_KILL_AFTER_CHUNKS: sending %s after chunk file %lld\n",
               signal_name(sig).c_str(), static_cast<long long>(written));
  std::fflush(stderr);
  ::kill(::getpid(), sig);  // to the process: the stop-signal thread takes it (core/stop_request.h)
  // A stop signal is recorded by that thread; wait for it, so the stop
  // happens right after this chunk (a test needs a known point).
  for (int i = 0; i < 1000 && local_stop_signal() == 0; ++i) usleep(10000);
}

// Reads chunk k and checks it holds rows [first, first + n) as this run
// would write them (array names, dtypes, shapes, and the labels themselves).
std::map<std::string, NpyArray> read_chunk(const SamplePartial& p, int64_t k, int64_t first, int64_t n,
                                           const OutputLayout& lay, const std::vector<int32_t>& labels) {
  const std::string path = p.chunk_path(k);
  const std::string redo = "; delete this file and rerun to draw its samples again (the other chunks are kept)";
  std::map<std::string, NpyArray> a;
  try {
    a = load_npz(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("sample: damaged chunk file: " + std::string(e.what()) + redo);
  }
  Shape want{n};
  want.insert(want.end(), lay.row.begin(), lay.row.end());
  auto bad = [&](const std::string& what) {
    return std::runtime_error("sample: chunk file '" + path + "': " + what + redo);
  };
  if (a.size() != 2 || !a.count(lay.key) || !a.count("labels"))
    throw bad("expected the arrays '" + lay.key + "' and 'labels'");
  if (a.at(lay.key).dtype != lay.dtype || a.at(lay.key).shape != want)
    throw bad("'" + lay.key + "' is " + a.at(lay.key).dtype + " " + shape_str(a.at(lay.key).shape) + ", expected " +
              lay.dtype + " " + shape_str(want));
  if (a.at("labels").dtype != "<i8" || a.at("labels").shape != Shape{n})
    throw bad("'labels' is not int64 [" + std::to_string(n) + "]");
  const std::vector<int64_t> got = a.at("labels").as<int64_t>();
  for (int64_t i = 0; i < n; ++i)
    if (got[static_cast<size_t>(i)] != labels[static_cast<size_t>(first + i)])
      throw bad("label of sample " + std::to_string(first + i) + " is " + std::to_string(got[static_cast<size_t>(i)]) +
                ", this run draws " + std::to_string(labels[static_cast<size_t>(first + i)]));
  return a;
}

// <out>.partial/assembly.npz.part: the final npz while it is assembled.
std::string assembly_path(const SamplePartial& p) { return p.dir() + "/assembly.npz.part"; }

// VT_TEST_SAMPLE_KILL_AFTER_COPIED=K: SIGKILL right after the K-th chunk's
// rows are in the assembly file and the chunk is removed.
void test_kill_after_copied(int64_t copied) {
  const char* spec = std::getenv("VT_TEST_SAMPLE_KILL_AFTER_COPIED");
  if (!spec || std::atoll(spec) != copied) return;
  std::fprintf(stderr, "VT_TEST_SAMPLE_KILL_AFTER_COPIED: SIGKILL after chunk %lld\n", static_cast<long long>(copied));
  std::fflush(stderr);
  ::kill(::getpid(), SIGKILL);
}

// Writes <out>.npz from the chunk files without holding the array: the
// member's npy header, then each chunk's rows in order (core/npz_stream_writer.h)
// into the assembly file, synced before the chunk is removed, so that every
// row is always in a chunk file or in the assembly file; a rerun continues
// the assembly after the last removed chunk (`copied` of them). Then
// `labels`, and the rename over <out>.npz. Returns the first (up to) 64 rows
// for the PNG grid.
std::vector<uint8_t> assemble(const SamplePartial& partial, int64_t chunk, const OutputLayout& lay,
                              const std::vector<int32_t>& labels, int64_t copied, const std::string& out) {
  const int64_t N = static_cast<int64_t>(labels.size());
  Shape shape{N};
  shape.insert(shape.end(), lay.row.begin(), lay.row.end());
  const size_t per = lay.row_bytes();
  const std::string work = assembly_path(partial);
  std::unique_ptr<NpzStreamWriter> w;
  if (fs::exists(work)) {
    w = NpzStreamWriter::resume(out, work, lay.key, lay.dtype, shape,
                               static_cast<uint64_t>(std::min(copied * chunk, N)) * per);
  } else {
    w = std::make_unique<NpzStreamWriter>(out, work);
    w->keep_work_file();  // holds the rows of removed chunks
    w->begin(lay.key, lay.dtype, shape);
  }
  for (int64_t first = copied * chunk, k = copied; first < N; first += chunk, ++k) {
    const int64_t n = std::min(chunk, N - first);
    const auto a = read_chunk(partial, k, first, n, lay, labels);
    w->write(a.at(lay.key).bytes.data(), static_cast<size_t>(n) * per);
    w->sync();
    fs::remove(partial.chunk_path(k));
    test_kill_after_copied(k + 1);
  }
  // The grid's rows, read back from the assembly file (chunk 0 may be gone).
  std::vector<uint8_t> preview(static_cast<size_t>(std::min<int64_t>(64, N)) * per);
  {
    w->sync();
    std::ifstream f(work, std::ios::binary);
    f.seekg(static_cast<std::streamoff>(w->data_offset()));
    if (!f.read(reinterpret_cast<char*>(preview.data()), static_cast<std::streamsize>(preview.size())))
      throw std::runtime_error("sample: cannot read back '" + work + "'");
  }
  w->end();
  w->add("labels", NpyArray::from(std::vector<int64_t>(labels.begin(), labels.end()), {N}));
  w->commit();
  return preview;
}

// The first (up to) 64 samples as U8 NHWC for the PNG grid; latents are
// shown as if they were pixels (channels 0..2).
Tensor grid_preview(const std::vector<uint8_t>& rows, int64_t N, const OutputLayout& lay) {
  const int64_t shown = std::min<int64_t>(64, N);
  Shape ps{shown};
  ps.insert(ps.end(), lay.row.begin(), lay.row.end());
  Tensor t = Tensor::empty(ps, lay.key == "latents" ? DType::F32 : DType::U8);
  std::memcpy(t.raw(), rows.data(), static_cast<size_t>(shown) * lay.row_bytes());
  return lay.key == "latents" ? to_uint8_nhwc(t) : t;
}

// VAE images per call: sample.batch, as the training grids.
int64_t vae_decode_batch(const DitTrainConfig& cfg) { return cfg.grid.batch; }

// What determines the samples, for the manifest (sample_partial.h). `weights`:
// the model's parameters as loaded, on the CPU (before any device copy), so
// other weights at the same checkpoint path are told apart.
SamplePartial::Keys sample_keys(const DitTrainConfig& cfg, const SampleRequest& req, int64_t chunk,
                                const OutputLayout& lay, const Tensor& weights) {
  const SampleOptions& opt = req.options;
  const bool latents = cfg.data_kind == "latents";
  const AutoencoderKL* vae = latents ? req.vae : nullptr;
  Sha256 wh;
  wh.add(weights.raw(), static_cast<size_t>(weights.numel()) * sizeof(float));
  std::string compute = cfg.compute.device.is_cpu() ? "cpu" : "cuda (" + cfg.compute.gpu_name + ")";
  compute += ", precision " + std::string(precision_name(cfg.compute.precision));
  return {
      {"weights", req.use_ema ? "ema" : "model"},
      {"weights_sha256", wh.hex()},
      {"model", describe_model(cfg.model)},
      {"num_timesteps", std::to_string(opt.num_timesteps)},
      {"sampler", opt.sampler},
      {"steps", std::to_string(opt.steps)},
      {"eta", num(opt.eta)},
      {"cfg_scale", num(opt.cfg_scale)},
      {"guided_channels", std::to_string(opt.guided_channels)},
      {"clip_denoised", opt.clip_denoised ? "true" : "false"},
      {"seed", std::to_string(opt.seed)},
      {"num_samples", std::to_string(req.num_samples)},
      {"batch", std::to_string(opt.batch)},
      {"chunk", std::to_string(chunk)},
      {"labels", "uniform in [0, " + std::to_string(cfg.model.num_classes) + ") from Philox(seed, labels)"},
      {"latent_scale", latents ? num(cfg.latent_scale) : "none"},
      {"vae_sha256", vae ? vae_fingerprint(req.vae_source) : "none"},
      {"vae_batch", vae ? std::to_string(vae_decode_batch(cfg)) : "none"},
      {"vae_precision", vae ? vae_precision_name(vae->precision()) : "none"},
      {"output", lay.str()},
      {"compute", compute}};
}

}  // namespace

void check_sample_output(const std::string& out) {
  const std::string what = "sample: out=" + out;
  if (out.empty()) throw std::runtime_error("sample: out= needs a path");
  const fs::path parent = fs::path(out).parent_path();
  std::error_code ec;
  if (!parent.empty()) fs::create_directories(parent, ec);
  const fs::path dir = parent.empty() ? fs::path(".") : parent;
  if (!fs::is_directory(dir))
    throw std::runtime_error(what + ": cannot create directory '" + dir.string() + "'" +
                             (ec ? ": " + ec.message() : std::string(": a file of that name exists")));
  if (access(dir.c_str(), W_OK | X_OK) != 0)
    throw std::runtime_error(what + ": directory '" + dir.string() + "' is not writable");
  for (const char* ext : {".npz", ".png"})
    if (fs::is_directory(out + ext))
      throw std::runtime_error(what + ": '" + out + ext + "' is a directory, expected a file name");
}

int64_t default_sample_chunk(int64_t batch) { return batch * std::max<int64_t>(1, 1024 / std::max<int64_t>(1, batch)); }

void dit_sample_to_files(const DitTrainConfig& cfg, const std::string& ckpt, int64_t num_samples,
                         const SampleOptions& opt, const std::string& out, bool use_ema) {
  SampleRequest r;
  r.ckpt = ckpt, r.out = out, r.num_samples = num_samples, r.options = opt, r.use_ema = use_ema;
  dit_sample_to_files(cfg, r);
}

void dit_sample_to_files(const DitTrainConfig& cfg, const SampleRequest& req) {
  const SampleOptions& opt = req.options;
  const int64_t N = req.num_samples;
  if (N < 1 || N > kMaxSamples)
    throw std::invalid_argument("sample: num_samples must be in [1, " + std::to_string(kMaxSamples) + "], got " +
                                std::to_string(N));
  if (opt.batch < 1) throw std::invalid_argument("sample: batch must be >= 1, got " + std::to_string(opt.batch));
  const int64_t bs = opt.batch, chunk = req.chunk > 0 ? req.chunk : default_sample_chunk(bs);
  if (chunk % bs != 0)
    throw std::invalid_argument("sample: chunk=" + std::to_string(chunk) + ": expected a multiple of batch (" +
                                std::to_string(bs) + ")");
  check_sample_output(req.out);
  // Before the checkpoint is read: a second sampler on this out= stops now.
  OutputClaim claim({"sample", "out=", "overwrite=true"}, req.out + ".npz");
  const bool latents = cfg.data_kind == "latents";
  const AutoencoderKL* vae = latents ? req.vae : nullptr;
  DiT model(cfg.model);
  CheckpointLoadOptions lo;
  lo.optimizer = false;
  lo.require_ema = req.use_ema;
  const CheckpointData ck = load_checkpoint(req.ckpt, lo);
  try {
    model.load(req.use_ema ? ck.ema : ck.model);
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + req.ckpt + "': " + e.what() +
                             resume_mismatch_hint(req.ckpt, req.use_ema ? ck.ema : ck.model, WeightsKind::DiT));
  }

  const int64_t C = cfg.model.in_channels, S = cfg.model.input_size;
  OutputLayout lay;
  if (vae) {
    const int64_t f = vae->config().downsample_factor();
    lay = {"arr_0", "|u1", {S * f, S * f, 3}};
  } else {
    lay = latents ? OutputLayout{"latents", "<f4", {C, S, S}} : OutputLayout{"arr_0", "|u1", {S, S, C}};
  }
  const int64_t decode_batch = vae_decode_batch(cfg);
  const int64_t num_chunks = (N + chunk - 1) / chunk;
  const SamplePartial::Keys keys = sample_keys(cfg, req, chunk, lay, model.params().weights());
  std::error_code ec;
  const fs::path ckpt_abs = fs::weakly_canonical(req.ckpt, ec);
  const SamplePartial::Keys info = {
      {"ckpt", ec ? req.ckpt : ckpt_abs.string()},
      {"ckpt_step", ck.state.contains("step") ? ck.state["step"].dump() : "?"},
      {"vae", vae ? req.vae_source : "none"}};
  if (claim.check(keys, req.overwrite)) {
    log().info("sample: {}.npz is done: it was made with these arguments ({}); nothing to draw "
               "(overwrite=true draws it again)",
               req.out, claim.record_path());
    return;
  }
  // The preview grid goes with the npz: a PATH.png that no finished sample
  // of this out= made (no npz beside it) is someone else's, not replaced
  // unless asked.
  std::error_code pec;
  if (!req.overwrite && fs::exists(req.out + ".png", pec) && !fs::exists(req.out + ".npz", pec))
    throw OutputDiffers("sample: '" + req.out + ".png' exists, and no '" + req.out +
                        ".npz' of a sample made it: give another out=, or overwrite=true to replace it");
  SamplePartial partial(req.out, keys, info, num_chunks, req.overwrite);
  // An assembly cut short: its chunks 0..copied-1 are in the assembly file,
  // the others must all be there.
  int64_t copied = 0;
  if (fs::exists(assembly_path(partial))) {
    while (copied < num_chunks && !partial.done(copied)) ++copied;
    for (int64_t k = copied; k < num_chunks; ++k)
      if (!partial.done(k))
        throw std::runtime_error("sample: '" + assembly_path(partial) + "' holds chunks 0-" + std::to_string(copied - 1) +
                                 " but chunk file '" + partial.chunk_path(k) +
                                 "' is missing; delete the directory to draw the samples again");
  }
  auto done = [&](int64_t k) { return k < copied || partial.done(k); };

  std::vector<int32_t> labels(static_cast<size_t>(N));
  Philox rng(opt.seed, philox_stream(kPurposeSampleLabels));
  for (auto& y : labels) y = static_cast<int32_t>(rng.integer(0, cfg.model.num_classes - 1));
  auto chunk_rows = [&](int64_t k) { return std::min(chunk, N - k * chunk); };
  int64_t already = 0;
  for (int64_t k = 0; k < num_chunks; ++k)
    if (done(k)) {
      // A damaged file fails now, not at the end.
      if (k >= copied) read_chunk(partial, k, k * chunk, chunk_rows(k), lay, labels);
      already += chunk_rows(k);
    }
  if (already > 0)
    log().info("sample: resuming: {} of {} samples already done ({} of {} chunks in {})", already, N,
               partial.chunks_done() + copied, num_chunks, partial.dir());

  if (already < N) {
    apply_device_choice(cfg.compute);
    log().info("sample: device {}", cfg.compute.describe());
    model.to(cfg.compute.device);
    if (cfg.compute.bf16()) model.params().enable_bf16_copy();
    if (!cfg.cluster.stop_signals.empty()) install_stop_signals(cfg.cluster.stop_signals);
    const int64_t K = sampling_diffusion(opt).num_steps();
    int64_t todo_batches = 0;
    for (int64_t k = 0; k < num_chunks; ++k)
      if (!done(k)) todo_batches += (chunk_rows(k) + bs - 1) / bs;
    ProgressOptions po;
    po.unit = "step";
    ProgressBar pb("sample", todo_batches * K, po);
    int64_t steps_done = 0, written = 0, saved = already;
    for (int64_t k = 0; k < num_chunks; ++k) {
      if (done(k)) continue;
      const int64_t first = k * chunk, n = chunk_rows(k);
      // Raw samples (model space: pixels in [-1, 1] or scaled latents) of the chunk.
      Tensor x = Tensor::empty({n, C, S, S});
      for (int64_t b0 = 0; b0 < n; b0 += bs) {
        const int64_t nb = std::min(bs, n - b0);
        const std::vector<int32_t> part(labels.begin() + first + b0, labels.begin() + first + b0 + nb);
        const int64_t base = steps_done;
        const Tensor xb = sample_images(
            model, opt, part, [&](int64_t done, int64_t) { pb.update(steps_done = base + done); }, first + b0);
        x.slice(0, b0, b0 + nb).copy_from(xb);
        if (b0 + nb == n) {
          if (latents) scale(x, static_cast<float>(1.0 / cfg.latent_scale), x);
          const Tensor o =
              vae ? naming_out_of_memory("sample: VAE decode of sample.batch=" + std::to_string(decode_batch) +
                                             " images per call (lower it)",
                                         [&] { return vae_decode_to_uint8(*vae, x, decode_batch, "chunk " + std::to_string(k)); })
                  : latents ? x : to_uint8_nhwc(x);
          std::map<std::string, NpyArray> arrays;
          arrays[lay.key] = NpyArray::from_tensor(o);
          arrays["labels"] =
              NpyArray::from(std::vector<int64_t>(labels.begin() + first, labels.begin() + first + n), {n});
          partial.write(k, arrays);
          saved += n;
          test_kill_after_chunk(++written);
        }
        // Once every chunk is written only the assembly is left: a request is ignored.
        const int sig = saved < N ? local_stop_signal() : 0;
        if (sig) {
          const std::string msg =
              "stopped by " + signal_name(sig) + ": " + std::to_string(saved) + " of " + std::to_string(N) +
              " samples are saved in " + partial.dir() +
              (b0 + nb == n ? std::string() : " (chunk " + std::to_string(k) + ", unfinished, is drawn again)") +
              "; rerun the same command to continue (exit status " + std::to_string(kExitStopped) + ")";
          log().warn("sample: {}", msg);
          throw StopRequested(sig, msg);
        }
      }
    }
    pb.finish();
  }

  // Every chunk is on disk (or already copied): the final npz, rows in order.
  const std::vector<uint8_t> preview = assemble(partial, chunk, lay, labels, copied, req.out + ".npz");
  save_png_grid(req.out + ".png", grid_preview(preview, N, lay));
  claim.record(keys, info);  // after the outputs: a record always describes a complete npz
  partial.remove();
  Shape final_shape{N};
  final_shape.insert(final_shape.end(), lay.row.begin(), lay.row.end());
  log().info("sample: wrote {}.npz ({} {}) and {}.png ({} samples, {} {} steps, cfg {}{})", req.out, lay.key,
             shape_str(final_shape), req.out, N, opt.sampler, opt.steps, opt.cfg_scale,
             vae ? ", decoded with the VAE " + req.vae_source : std::string());
}

}  // namespace vt
