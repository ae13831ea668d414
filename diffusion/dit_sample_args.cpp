#include "diffusion/dit_sample_args.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "core/checkpoint_dir.h"
#include "core/output_claim.h"
#include "diffusion/dit_sample_files.h"

namespace vt {
namespace {

[[noreturn]] void bad(const std::string& key, const std::string& value, const std::string& what) {
  throw ConfigError("sample: " + key + "=" + value + ": " + what);
}

// The whole text must be a decimal integer in [lo, hi] ("3x", "", "1e3" fail).
int64_t parse_int(const std::string& key, const std::string& v, int64_t lo, int64_t hi) {
  const std::string range = "expected an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  int64_t x = 0;
  const char* end = v.data() + v.size();
  const auto r = std::from_chars(v.data(), end, x);
  if (r.ec == std::errc::result_out_of_range) bad(key, v, range + " (out of range)");
  if (v.empty() || r.ec != std::errc() || r.ptr != end) bad(key, v, range);
  if (x < lo || x > hi) bad(key, v, range);
  return x;
}

// The whole text must be a finite number in [lo, hi].
double parse_float(const std::string& key, const std::string& v, double lo, double hi) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "expected a finite number in [%g, %g]", lo, hi);
  errno = 0;
  char* end = nullptr;
  const double x = v.empty() ? 0.0 : std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size() || errno == ERANGE || !std::isfinite(x) || x < lo || x > hi)
    bad(key, v, buf);
  return x;
}

std::string one_of(const std::string& key, const std::string& v, const std::set<std::string>& allowed) {
  if (allowed.count(v)) return v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : " | ") + a;
  bad(key, v, "expected " + list);
}

}  // namespace

const std::set<std::string>& dit_sample_arg_keys() {
  static const std::set<std::string> k = {"ckpt",    "num_samples", "steps", "cfg_scale", "seed",
                                          "sampler", "eta",         "batch", "weights",   "out", "chunk", "overwrite"};
  return k;
}

DitSampleArgs parse_dit_sample_args(const std::map<std::string, std::string>& opts, const DitTrainConfig& cfg) {
  for (const auto& kv : opts)
    if (!dit_sample_arg_keys().count(kv.first)) bad(kv.first, kv.second, "unknown sample argument");
  auto has = [&](const char* k) { return opts.count(k) > 0; };
  auto at = [&](const char* k) { return opts.at(k); };
  DitSampleArgs a;
  if (!has("ckpt") || at("ckpt").empty()) throw ConfigError("sample: ckpt=DIR (a checkpoint directory) is required");
  a.ckpt = at("ckpt");
  // A run directory stands for its newest complete checkpoint, as for veval
  // top1 (it failed with "missing state.json").
  std::error_code ec;
  if (std::filesystem::is_directory(a.ckpt, ec) &&
      !std::filesystem::exists(std::filesystem::path(a.ckpt) / "state.json", ec)) {
    const std::optional<std::string> latest = latest_checkpoint(a.ckpt);
    if (!latest)
      throw std::runtime_error("sample: ckpt=" + a.ckpt + ": neither a checkpoint (no state.json) nor a run directory "
                               "holding a complete step_<N>/");
    a.ckpt = *latest;
  }
  SampleOptions& so = a.options;
  so = cfg.grid;
  if (has("sampler")) so.sampler = one_of("sampler", at("sampler"), {"ddpm", "ddim"});
  if (has("steps")) so.steps = static_cast<int>(parse_int("steps", at("steps"), 1, cfg.num_timesteps));
  if (has("cfg_scale")) so.cfg_scale = parse_float("cfg_scale", at("cfg_scale"), 0, 1000);
  if (has("eta")) so.eta = parse_float("eta", at("eta"), 0, 1000);
  if (has("seed")) so.seed = static_cast<uint64_t>(parse_int("seed", at("seed"), 0, INT64_MAX));
  if (has("batch")) so.batch = static_cast<int>(parse_int("batch", at("batch"), 1, 4096));
  if (has("num_samples")) a.num_samples = parse_int("num_samples", at("num_samples"), 1, kMaxSamples);
  if (has("chunk")) {
    a.chunk = parse_int("chunk", at("chunk"), 1, kMaxSamples);
    if (a.chunk % so.batch != 0) bad("chunk", at("chunk"), "expected a multiple of batch (" + std::to_string(so.batch) + ")");
  }
  if (has("weights")) a.use_ema = one_of("weights", at("weights"), {"ema", "model"}) == "ema";
  if (has("overwrite")) a.overwrite = one_of("overwrite", at("overwrite"), {"true", "false"}) == "true";
  char g[32];
  std::snprintf(g, sizeof g, "%g", so.cfg_scale);
  const std::string default_name = "samples_" + std::to_string(a.num_samples) + "_" + so.sampler +
                                   std::to_string(so.steps) + "_cfg" + g + "_seed" + std::to_string(so.seed);
  if (has("out")) {
    if (at("out").empty()) bad("out", "", "expected a path");
    // The name given: x.npz is x.npz (not x.npz.npz); DIR/ holds the default name.
    const std::string file = output_file_name(at("out"), ".npz", default_name);
    a.out = file.substr(0, file.size() - 4);
  } else {
    a.out = (std::filesystem::path(a.ckpt) / default_name).string();
  }
  return a;
}

}  // namespace vt
