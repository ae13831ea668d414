// The GPU mode of the training-step benchmarks (bench_train_step,
// bench_dit_step): command line, timing, figures, JSON. The step itself is
// the trainers' (vision/train_step.h, diffusion/dit_step.h) run by the
// trainers' loop (train/loop.h: TrainLoop with its device update, i.e. the
// fused clip/AdamW/bf16-copy/EMA pass and the deferred reads), on synthetic
// inputs that stay on the device; only the data pipeline is left out.
//
// Timing: a timing CUDA event on the compute stream at the start of every
// step and one after the last step's update; a step's time is the device
// time between two consecutive events, so host gaps (launch overhead the
// GPU waits for) count. Warm-up steps first (workspace planning, cuBLAS
// and cuDNN plans), then the median of the timed steps.
// Figures per run: img/s (batch / median step), MFU = img/s x 3 x forward
// FLOPs (bench/model_flops.h) / the dense bf16 peak of the GPU (by name, or
// --peak-tflops), peak memory (the caching allocator's high-water mark of
// bytes in use, as torch.cuda.max_memory_allocated, from model build to the
// last step), the backbone's saved activations (Backbone::
// saved_activation_bytes), and the losses of the first and last step.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backbone/optimizer_state.h"
#include "bench/loop_task.h"
#include "core/allocator.h"
#include "core/cuda_stream.h"
#include "train/device_choice.h"
#include "train/update_step.h"

namespace vt_bench {

struct StepArgs {
  vt::DeviceChoice compute;          // --device cuda[:N], --precision bf16|fp32|tf32 (train/device_choice.h)
  int64_t batch = 256;               // --batch
  int warmup = 3, iters = 10;        // --warmup, --iters
  std::vector<std::string> schemes;  // --scheme pre,siamese (comma-separated); empty: the program's default
  bool tiny = false;                 // --tiny: the program's tiny model (emulator tests)
  double peak_tflops = 0;            // --peak-tflops: dense bf16 peak for the MFU (0: by GPU name)
  bool cuda_graph = true;            // --cuda-graph auto|off: train.cuda_graph, the trainers' default auto
};

// Whether argv asks for the GPU mode (an argument starting with "--").
inline bool is_step_mode(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]).rfind("--", 0) == 0) return true;
  return false;
}

// Parses the flags above; prints the bad flag or value (naming it) and the
// usage on stderr and returns false for bad input.
inline bool parse_step_args(int argc, char** argv, const char* usage, StepArgs& a) {
  std::string device = "cuda", precision = "bf16";
  auto fail = [&](const std::string& msg) {
    std::fprintf(stderr, "%s: %s\nusage: %s\n", argv[0], msg.c_str(), usage);
    return false;
  };
  auto number = [&](const std::string& flag, const std::string& v, double lo, double& out) {
    char* end = nullptr;
    out = std::strtod(v.c_str(), &end);
    if (!v.empty() && *end == 0 && out >= lo) return true;
    return fail(flag + " " + v + ": expected a number >= " + std::to_string(static_cast<int>(lo)));
  };
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--tiny") { a.tiny = true; continue; }
    if (f == "-h" || f == "--help") return fail("help");
    if (i + 1 >= argc) return fail(f + ": a value is missing (or unknown flag)");
    const std::string v = argv[++i];
    double x = 0;
    if (f == "--device") device = v;
    else if (f == "--precision") precision = v;
    else if (f == "--batch") { if (!number(f, v, 1, x)) return false; a.batch = static_cast<int64_t>(x); }
    else if (f == "--iters") { if (!number(f, v, 1, x)) return false; a.iters = static_cast<int>(x); }
    else if (f == "--warmup") { if (!number(f, v, 1, x)) return false; a.warmup = static_cast<int>(x); }
    else if (f == "--peak-tflops") { if (!number(f, v, 0, x)) return false; a.peak_tflops = x; }
    else if (f == "--cuda-graph") {
      if (v != "auto" && v != "off") return fail("--cuda-graph " + v + ": expected auto or off");
      a.cuda_graph = v == "auto";
    }
    else if (f == "--scheme") {
      a.schemes.clear();
      std::stringstream ss(v);
      for (std::string s; std::getline(ss, s, ',');) a.schemes.push_back(s);
      if (a.schemes.empty()) return fail("--scheme: empty");
    } else return fail("unknown flag " + f);
  }
  if (device == "cpu") return fail("--device cpu: the step benchmark's GPU mode needs cuda[:N] (the CPU mode takes positional arguments)");
  try {
    a.compute = vt::choose_device(device, precision, "--device", "--precision");
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (!a.compute.device.is_cuda()) return fail("--device " + device + ": the step benchmark's GPU mode needs cuda[:N] (the CPU mode takes positional arguments)");
  return true;
}

// Dense bf16 tensor-core peak, TFLOP/s, of a GPU by its name (NVIDIA data
// sheets, SXM parts); 0 when unknown.
inline double dense_bf16_peak_tflops(const std::string& name) {
  for (const auto& [k, v] : {std::pair<const char*, double>{"H200", 989.0}, {"H100", 989.0}, {"A100", 312.0}})
    if (name.find(k) != std::string::npos) return v;
  return 0;
}

struct StepRun {
  std::vector<double> step_ms;  // the timed steps, in order
  int64_t graph_replays = 0;    // timed steps that were launches of the captured CUDA Graph
  double first_loss = 0, last_loss = 0;
  double median_ms() const {
    std::vector<double> s = step_ms;
    std::sort(s.begin(), s.end());
    return s[s.size() / 2];
  }
  double best_ms() const { return *std::min_element(step_ms.begin(), step_ms.end()); }
};

// A model's step as the trainers run it: `whole(s)` is forward/backward of
// step s returning its device scalars (loss first); `prepare(s)` and
// `body()` the same in the two parts of a CUDA Graph step (host part, then
// the fixed device part; train/step_graph.h), or unset.
struct StepFns {
  std::function<vt::Tensor(int64_t)> whole;
  std::function<vt::Tensor(int64_t)> prepare;
  std::function<void()> body;
  // Called once step s's update is queued (a real-batch feeder prefetches
  // the next batch there, as vtrain does), or unset.
  std::function<void(int64_t)> after;
};

// Runs warmup + iters steps under the trainers' loop (bench/loop_task.h)
// with update `u` and learning rate `lr`, as CUDA Graph steps when
// a.cuda_graph and the step has its two parts (the first step of each
// loop run is eager, the second captures: the warm-up holds both). Times
// the steps after the warm-up.
inline StepRun run_steps(vt::ParamStore& ps, vt::OptimizerState& opt, const vt::UpdateOptions& u, double lr,
                         const StepFns& fns, const StepArgs& a) {
  auto output = [&](int64_t s, vt::Tensor scalars) {
    vt::StepTask::Output o;
    o.scalars = std::move(scalars);
    o.lr = lr;
    o.where = "benchmark step " + std::to_string(s);
    return o;
  };
  FunctionStepTask task([&](int64_t s) { return output(s, fns.whole(s)); });
  if (a.cuda_graph && fns.prepare && fns.body) {
    task.prepare = [&](int64_t s) { return output(s, fns.prepare(s)); };
    task.device = fns.body;
  }
  std::vector<vt::CudaEvent> marks;
  auto mark = [&](int64_t) {
    marks.push_back(vt::CudaEvent::create_timing(a.compute.device.index));
    marks.back().record(nullptr);  // on the compute stream
  };
  LoopHarness loop(ps, opt, u, a.cuda_graph);
  const int64_t end = a.warmup + a.iters;
  // One loop run for warm-up and timed steps: a new run would capture again.
  int64_t replays_before_timing = 0;
  task.on_start = [&](int64_t s) {  // the start of every timed step
    if (s == a.warmup + 1) replays_before_timing = loop.loop().graph_replays();
    if (s > a.warmup) mark(s);
  };
  task.on_end = [&](int64_t s) {  // and after the last one's update
    if (s == end) mark(s);
    if (fns.after) fns.after(s);
  };
  loop.run(task, 0, end);
  StepRun r;
  for (size_t i = 0; i + 1 < marks.size(); ++i) r.step_ms.push_back(vt::elapsed_ms(marks[i], marks[i + 1]));
  r.graph_replays = std::max<int64_t>(0, loop.loop().graph_replays() - replays_before_timing);
  r.first_loss = task.losses.front();
  r.last_loss = task.losses.back();
  return r;
}

// One scheme's figures.
struct StepFigures {
  std::string scheme;
  double step_ms = 0, best_ms = 0, img_per_s = 0;
  double fwd_macs = 0;  // per image
  double peak_tflops = 0, mfu = -1;  // -1: no peak known
  int64_t peak_bytes = 0;  // allocator high-water mark
  int64_t saved_activation_bytes = 0, params = 0;
  double first_loss = 0, last_loss = 0;
  int64_t graph_replays = 0;  // timed steps run as CUDA Graph launches
};

inline StepFigures figures(const StepRun& r, const StepArgs& a, const std::string& scheme, double fwd_macs,
                           int64_t saved_activation_bytes, int64_t params) {
  StepFigures f;
  f.scheme = scheme;
  f.step_ms = r.median_ms(), f.best_ms = r.best_ms();
  f.img_per_s = static_cast<double>(a.batch) / (f.step_ms / 1e3);
  f.fwd_macs = fwd_macs;
  f.peak_tflops = a.peak_tflops > 0 ? a.peak_tflops : dense_bf16_peak_tflops(a.compute.gpu_name);
  if (f.peak_tflops > 0) f.mfu = f.img_per_s * 3 * 2 * fwd_macs / (f.peak_tflops * 1e12);
  f.peak_bytes = static_cast<int64_t>(vt::cuda_peak_bytes_in_use());
  f.saved_activation_bytes = saved_activation_bytes, f.params = params;
  f.first_loss = r.first_loss, f.last_loss = r.last_loss;
  f.graph_replays = r.graph_replays;
  return f;
}

// Prints one JSON line: `head` (the program's own fields) with device,
// precision, batch, timing, memory and MFU.
inline void print_figures(nlohmann::json head, const StepArgs& a, const StepFigures& f) {
  constexpr double GiB = 1024.0 * 1024.0 * 1024.0;
  head["device"] = a.compute.device.str();
  head["gpu"] = a.compute.gpu_name;
  head["precision"] = vt::precision_name(a.compute.precision);
  head["scheme"] = f.scheme;
  head["batch"] = a.batch;
  head["warmup"] = a.warmup;
  head["iters"] = a.iters;
  head["step_ms"] = f.step_ms;
  head["step_ms_best"] = f.best_ms;
  head["img_per_s"] = f.img_per_s;
  head["fwd_gmac_per_img"] = f.fwd_macs / 1e9;
  head["fwd_gflop_per_img"] = 2 * f.fwd_macs / 1e9;
  if (f.mfu >= 0) head["mfu"] = f.mfu, head["peak_tflops"] = f.peak_tflops;
  head["peak_gib"] = static_cast<double>(f.peak_bytes) / GiB;
  head["saved_activation_gib"] = static_cast<double>(f.saved_activation_bytes) / GiB;
  head["saved_activation_bytes"] = f.saved_activation_bytes;
  head["params"] = f.params;
  head["loss_first"] = f.first_loss;
  head["loss_last"] = f.last_loss;
  head["cuda_graph"] = a.cuda_graph ? "auto" : "off";
  head["graph_replays"] = f.graph_replays;  // of the `iters` timed steps
  std::printf("%s\n", head.dump().c_str());
  std::fflush(stdout);
}

// With both pre and siamese measured: one line with siamese / pre of step
// time, saved activations and peak memory, and the project's goals (<= 1.03
// step time, <= 1.10 activation memory).
inline void print_scheme_ratio(const std::string& bench, const std::vector<StepFigures>& all) {
  const StepFigures *pre = nullptr, *sia = nullptr;
  for (const StepFigures& f : all) {
    if (f.scheme == "pre") pre = &f;
    if (f.scheme == "siamese") sia = &f;
  }
  if (!pre || !sia) return;
  nlohmann::json j;
  j["bench"] = bench;
  j["step_time_siamese_over_pre"] = sia->step_ms / pre->step_ms;
  j["saved_activation_siamese_over_pre"] =
      static_cast<double>(sia->saved_activation_bytes) / static_cast<double>(pre->saved_activation_bytes);
  j["peak_memory_siamese_over_pre"] = static_cast<double>(sia->peak_bytes) / static_cast<double>(pre->peak_bytes);
  j["target_step_time"] = 1.03;
  j["target_activation"] = 1.10;
  std::printf("%s\n", j.dump().c_str());
  std::fflush(stdout);
}

}  // namespace vt_bench
