// gpu_check's `input` stage: can the input pipeline feed DeiT-S on this GPU?
// On a packed split (`vtrain pack ... max_side=512`, data.format: shards) or
// an image folder, with the DeiT train transform (RandomResizedCrop 224,
// flip, RandAugment rand-m9-mstd0.5-inc1, normalize, RandomErasing 0.25),
// one invocation measures, side by side:
//
//   loader  images/s through the whole input path, no model: the loader's
//           workers -> pinned slots -> upload -> augmentation on the GPU
//           (kernels/augment.h), for each input path:
//             host    the workers decode only the crop's region (data.decode:
//                     crop, DCT scaling) and resize it (data.augment_on: device)
//             device  the workers read bytes and headers, nvJPEG decodes
//                     the batch on the GPU (data.decode_on: device)
//           with the images per decode path (nvJPEG engines / CUDA backend /
//           host fallback) for `device`;
//   agreement  how far the device path's crops are from the host's
//           (full-size libjpeg-turbo decode, same box and resize) over one
//           batch: max / mean absolute difference per value;
//   step    vtrain's DeiT-S step (bench/vit_bench_step.h, bf16, CUDA Graph
//           steps, no Mixup) on one synthetic batch, then on the loader's
//           batches of each path (decoded and augmented, copied into the
//           step's fixed input buffers, the next batch prefetched once the
//           step is queued, as vtrain does): img/s and real / synthetic
//           (the input path's target: >= 0.95).
//
// Every batch is new: sample i of the run is dataset index i mod N with its
// own draw id, so a small split serves any number of steps.
//
//   bench_input DIR [--batch 256] [--steps 40] [--warmup 4] [--workers N]
//               [--paths host,device] [--precision bf16] [--cuda-graph auto|off] [--tiny]
//   DIR: a split folder of packed shards (manifest.json) or of class folders.
//   --workers: loader threads (default: the cores); --warmup: batches taken
//   before timing, at least the loader ring's (workers + 4); --tiny: img 32
//   and the tiny model (the emulator's size). Step img/s is over the whole
//   timed window (a slow loader's waits count), with the median step's beside.
// One JSON line per measurement, then one with the ratios. Exit 1 on an error.
//
// This program decodes JPEGs only: it defines decode_other_format
// (data_pipeline/decode_other.h) to refuse other formats, so it does not
// need OpenCV's imgcodecs and its codec libraries, which the GPU bundle
// (scripts/bundle_gpu_build.sh) cannot carry.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/model_flops.h"
#include "bench/step_bench.h"
#include "bench/vit_bench_step.h"
#include "core/allocator.h"
#include "core/cuda_stream.h"
#include "data_pipeline/augment_plan.h"
#include "data_pipeline/batch_upload.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/decode.h"
#include "data_pipeline/decode_other.h"
#include "data_pipeline/device/device_batch_decode.h"
#include "data_pipeline/loader.h"
#include "data_pipeline/sampler.h"
#include "data_pipeline/shard_dataset.h"
#include "kernels/augment.h"
#include "train/device_choice.h"
#include "vision/split_dataset.h"
#include "vision/train_config.h"

namespace vt {
// JPEG only (above): the link seam of decode_other.h.
cv::Mat decode_other_format(const uint8_t*, size_t, const std::string& name, ImageFormat format) {
  throw CorruptImage("cannot decode '" + name + "': bench_input decodes JPEG files only, this is " +
                     image_format_name(format));
}
}  // namespace vt

using namespace vt;

namespace {

struct Args {
  vt_bench::StepArgs step;
  std::string dir;
  int classes = 0;  // the split's
  int workers = 0;
  std::vector<std::string> paths{"host", "device"};
};

int usage_error(const std::string& msg) {
  std::fprintf(stderr,
               "bench_input: %s\nusage: bench_input DIR [--batch 256] [--steps 40] [--warmup 4] [--workers N] "
               "[--paths host,device] [--precision bf16] [--cuda-graph auto|off] [--tiny]\n",
               msg.c_str());
  return 2;
}

void sync_device(int device) {
  CudaEvent e = CudaEvent::create(device);
  e.record(nullptr);
  e.synchronize();
}

// DIR as vtrain opens a split (vision/split_dataset.h): packed shards when
// it holds a manifest, else an image folder.
std::shared_ptr<Dataset> open_dir(const std::string& dir, const ImagePipelineConfig& cfg) {
  namespace fs = std::filesystem;
  const fs::path p = fs::absolute(dir).lexically_normal();
  const fs::path split = p.has_filename() ? p : p.parent_path();  // "DIR/" names DIR
  TrainOptions o;
  o.data_root = split.parent_path().string();
  o.data_format = fs::exists(split / kShardManifestName) ? "shards" : "folder";
  return open_split(o, "bench_input DIR", split.filename().string(), cfg);
}

// One input path: the dataset, loader, uploader and (device) decoder, and
// the augmentation of each uploaded batch into `augmented`.
class Input {
 public:
  Input(const Args& a, const std::string& path, int64_t batches) : device_path_(path == "device") {
    const vt_bench::StepArgs& s = a.step;
    ImagePipelineConfig cfg;  // DeiT's train transform (dataset.h defaults)
    cfg.size = s.tiny ? 32 : 224;
    cfg.decode = device_path_ ? DecodeMode::Full : DecodeMode::Crop;
    ds_ = open_dir(a.dir, cfg);
    settings_ = augment_settings(cfg);
    EpochOrder order;
    const int64_t n = batches * s.batch;
    for (int64_t i = 0; i < n; ++i) order.indices.push_back(i % ds_->size()), order.draw_ids.push_back(i);
    LoaderConfig lc;
    lc.batch_size = static_cast<int>(s.batch);
    lc.workers = a.workers;
    lc.prefetch = a.workers;  // the ring: workers + Loader::kLeasedSlots batches (warm_up_batches)
    lc.seed = 1;
    lc.on_corrupt = OnCorrupt::Skip;
    lc.pinned_slots = true;
    lc.augment_plans = true;
    lc.encoded = device_path_;
    if (device_path_) {
      decoder_ = std::make_unique<DeviceBatchDecoder>(s.compute.device.index);
      lc.device_decodes = decoder_->worker_filter();  // as vtrain: what nvJPEG does not take, on the workers
    }
    loader_ = std::make_unique<Loader>(ds_, lc);
    loader_->start_epoch(0, std::move(order));
    BatchUploader::Decode decode;
    if (device_path_) decode = decoder_->uploader_hook(*loader_);
    upload_ = std::make_unique<BatchUploader>(*loader_, s.compute.device, BatchUploader::Prepare{}, std::move(decode));
  }
  ~Input() {
    upload_.reset();  // waits for its copies before the loader and decoder go
  }

  // The next batch before augmentation: U8 [B, S, S, 3] crops on the device.
  DeviceBatch next_crops() {
    DeviceBatch d;
    if (!upload_->next(d)) throw std::runtime_error("bench_input: the loader ran out of batches");
    return d;
  }

  // The next batch, augmented on the device: F32 [B, 3, S, S] (valid until
  // the next call) and its labels.
  void next(Tensor* images, Tensor* labels) {
    DeviceBatch d = next_crops();
    augment_crops(d.images, d.plans, settings_, augmented_, &scratch_);
    *images = augmented_;
    *labels = d.labels;
  }
  void prefetch() { upload_->prefetch(); }

  nlohmann::json path_counts() const {
    nlohmann::json j = nlohmann::json::object();
    if (!decoder_) return j;
    const DeviceBatchDecoder::Counts& c = decoder_->counts();
    j["nvjpeg_backend"] = decoder_->hardware() ? "hardware" : "cuda";
    j["nvjpeg_images"] = c.nvjpeg_hardware + c.nvjpeg_cuda;
    j["host_fallback_images"] = c.host_fallback;
    j["nvjpeg_failed_images"] = c.nvjpeg_failed;  // of host_fallback_images: failed rather than refused
    j["host_crops"] = c.host_crops;
    return j;
  }
  int64_t corrupt() const { return loader_->corrupt_count(); }

 private:
  bool device_path_;
  std::shared_ptr<Dataset> ds_;
  AugmentSettings settings_;
  std::unique_ptr<Loader> loader_;
  std::unique_ptr<DeviceBatchDecoder> decoder_;
  std::unique_ptr<BatchUploader> upload_;
  Tensor augmented_;
  AugmentScratch scratch_;
};

// Batches to take before timing: the ring's, which the workers fill while the
// consumer starts (model build, graph capture), and two more, so that a
// timed window starts with the ring as it runs: timing a full ring would
// count batches made before the window.
int warm_up_batches(const Args& a) { return std::max(a.step.warmup, a.workers + Loader::kLeasedSlots + 2); }

// The whole input path alone: img/s over `steps` batches after the warm-up.
nlohmann::json measure_loader(const Args& a, const std::string& path) {
  vt_bench::StepArgs s = a.step;
  s.warmup = warm_up_batches(a);
  Input in(a, path, s.warmup + s.iters + 1);
  Tensor images, labels;
  std::chrono::steady_clock::time_point t0;
  for (int k = 0; k < s.warmup + s.iters; ++k) {
    if (k == s.warmup) {
      sync_device(s.compute.device.index);
      t0 = std::chrono::steady_clock::now();
    }
    in.next(&images, &labels);
    in.prefetch();
  }
  sync_device(s.compute.device.index);
  const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  nlohmann::json j = {{"bench", "input_loader"}, {"path", path},          {"workers", a.workers},
                      {"batch", s.batch},        {"warmup", s.warmup}, {"batches", s.iters},
                      {"img_per_s", static_cast<double>(s.iters * s.batch) / sec}};
  j["img_per_s_per_worker"] = j["img_per_s"].get<double>() / a.workers;
  j.update(in.path_counts());
  j["corrupt_skipped"] = in.corrupt();
  return j;
}

// How far the device path's crops (nvJPEG's decode, cropped and resized on
// the GPU) are from the host's (libjpeg-turbo at full size, the same box,
// Pillow's bicubic: data.decode: full, data.dct_scaling: false), over the
// first batch: per uint8 value, the largest and the mean absolute
// difference and the share that differ. 0 on the emulator (its nvJPEG is
// libjpeg-turbo); on a GPU, nvJPEG's IDCT and colour conversion.
nlohmann::json measure_agreement(const Args& a) {
  const vt_bench::StepArgs& s = a.step;
  Input in(a, "device", 2);
  const DeviceBatch d = in.next_crops();
  const Tensor dev = d.images.to(Device::cpu());
  ImagePipelineConfig cfg;
  cfg.size = s.tiny ? 32 : 224;
  cfg.dct_scaling = false;
  const std::shared_ptr<Dataset> ds = open_dir(a.dir, cfg);
  const int64_t per = int64_t(cfg.size) * cfg.size * 3;
  std::vector<uint8_t> ref(static_cast<size_t>(per));
  int max_diff = 0;
  double sum = 0;
  int64_t differ = 0, values = 0;
  for (int64_t i = 0; i < dev.shape()[0]; ++i) {
    Philox rng(1, philox_stream(kPurposeAugment, 0, static_cast<uint64_t>(i)));  // the loader's key (seed 1, epoch 0, draw id i)
    AugmentPlan plan;
    ds->load_planned(d.indices[static_cast<size_t>(i)], rng, ref.data(), &plan);
    const uint8_t* g = dev.data<uint8_t>() + i * per;
    for (int64_t v = 0; v < per; ++v) {
      const int diff = std::abs(int(g[v]) - int(ref[static_cast<size_t>(v)]));
      max_diff = std::max(max_diff, diff);
      sum += diff;
      differ += diff != 0;
    }
    values += per;
  }
  return {{"bench", "input_agreement"},
          {"images", dev.shape()[0]},
          {"device_vs_host_max_abs_diff", max_diff},
          {"device_vs_host_mean_abs_diff", sum / static_cast<double>(values)},
          {"device_vs_host_values_differing", static_cast<double>(differ) / static_cast<double>(values)}};
}

// vtrain's step on synthetic images (path empty) or the loader's batches.
// img/s over the whole timed window (its mean step), not the median step:
// a loader slower than the step makes some steps wait, and the median
// would hide them.
nlohmann::json measure_step(const Args& a, const std::string& path) {
  vt_bench::StepArgs s = a.step;
  s.warmup = warm_up_batches(a);
  cuda_reset_peak_bytes();
  vt_bench::VitBenchStep st(s, NormScheme::Siamese, a.classes);
  std::unique_ptr<Input> input;
  std::function<void(int64_t)> feed;
  if (!path.empty()) {
    input = std::make_unique<Input>(a, path, s.warmup + s.iters + 2);
    feed = [&](int64_t) {
      Tensor images, labels;
      input->next(&images, &labels);
      st.in.images.copy_from(images);  // the step's fixed buffers (CUDA Graph steps read these addresses)
      st.in.labels.copy_from(labels);
    };
  }
  vt_bench::StepFns fns = st.fns(feed);
  if (input) fns.after = [&](int64_t) { input->prefetch(); };
  const vt_bench::StepRun r = vt_bench::run_steps(st.model.params(), *st.opt, st.update, 5e-4, fns, s);
  const vt_bench::StepFigures f = vt_bench::figures(r, s, "siamese", vt_bench::vit_forward_macs(st.cfg),
                                                    st.model.backbone().saved_activation_bytes(),
                                                    st.model.params().numel());
  double window_ms = 0;
  for (double ms : r.step_ms) window_ms += ms;
  const double mean_ms = window_ms / static_cast<double>(r.step_ms.size());
  nlohmann::json j = {{"bench", "input_step"},
                      {"batches", path.empty() ? "synthetic" : path},
                      {"batch", s.batch},
                      {"warmup", s.warmup},
                      {"steps", s.iters},
                      {"step_ms_mean", mean_ms},
                      {"step_ms_median", f.step_ms},
                      {"step_ms_max", *std::max_element(r.step_ms.begin(), r.step_ms.end())},
                      {"img_per_s", static_cast<double>(s.batch) / (mean_ms / 1e3)},
                      {"img_per_s_median_step", f.img_per_s},
                      {"graph_replays", f.graph_replays},
                      {"loss_first", f.first_loss},
                      {"loss_last", f.last_loss}};
  if (input) j.update(input->path_counts());
  return j;
}

bool parse(int argc, char** argv, Args& a, std::string* err) {
  if (argc < 2 || std::string(argv[1]).rfind("--", 0) == 0) return *err = "DIR is missing", false;
  a.dir = argv[1];
  std::vector<char*> rest{argv[0]};
  for (int i = 2; i < argc; ++i) {
    const std::string f = argv[i];
    if ((f == "--workers" || f == "--paths" || f == "--steps") && i + 1 >= argc) return *err = f + ": a value is missing", false;
    if (f == "--workers") {
      a.workers = std::atoi(argv[++i]);
      if (a.workers < 1) return *err = "--workers " + std::string(argv[i]) + ": expected a number >= 1", false;
    } else if (f == "--paths") {
      a.paths.clear();
      std::stringstream ss(argv[++i]);
      for (std::string p; std::getline(ss, p, ',');) {
        if (p != "host" && p != "device") return *err = "--paths: '" + p + "' is not host or device", false;
        a.paths.push_back(p);
      }
    } else if (f == "--steps") {
      rest.push_back(const_cast<char*>("--iters"));
      rest.push_back(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  if (a.workers == 0) a.workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  a.step.batch = 256, a.step.iters = 40, a.step.warmup = 4;
  static const char* usage = "bench_input DIR [--batch 256] [--steps 40] [--warmup 4] [--workers N] ...";
  if (!vt_bench::parse_step_args(static_cast<int>(rest.size()), rest.data(), usage, a.step))
    return *err = "a step flag or the device was refused (above)", false;
  if (!std::filesystem::is_directory(a.dir)) return *err = "DIR '" + a.dir + "' is not a folder", false;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  std::string err;
  if (!parse(argc, argv, a, &err)) return usage_error(err);
  try {
    apply_device_choice(a.step.compute);
    a.classes = open_dir(a.dir, ImagePipelineConfig{})->num_classes();
    for (const std::string& p : a.paths) std::printf("%s\n", measure_loader(a, p).dump().c_str()), std::fflush(stdout);
    if (std::find(a.paths.begin(), a.paths.end(), "device") != a.paths.end())
      std::printf("%s\n", measure_agreement(a).dump().c_str()), std::fflush(stdout);
    const nlohmann::json synthetic = measure_step(a, "");
    std::printf("%s\n", synthetic.dump().c_str());
    std::fflush(stdout);
    nlohmann::json ratios = {{"bench", "input_ratio"}, {"target_real_over_synthetic", 0.95}};
    for (const std::string& p : a.paths) {
      const nlohmann::json real = measure_step(a, p);
      std::printf("%s\n", real.dump().c_str());
      std::fflush(stdout);
      ratios[p + "_real_over_synthetic"] = real["img_per_s"].get<double>() / synthetic["img_per_s"].get<double>();
    }
    std::printf("%s\n", ratios.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_input: %s\n", e.what());
    return 1;
  }
  return 0;
}
