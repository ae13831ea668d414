// dittrain: DiT diffusion training and sampling (DESIGN.md §6).
//
//   dittrain CONFIG.yaml [key.path=value ...]
//   dittrain sample CONFIG.yaml ckpt=DIR [num_samples=N] [steps=250]
//            [cfg_scale=S] [seed=K] [sampler=ddpm|ddim] [eta=E] [batch=B]
//            [weights=ema|model] [out=PATH] [key.path=value ...]
//
// CONFIG is looked up as given, then in the configs/ directory of the
// source tree. Sampling writes PATH.npz and PATH.png (default PATH:
// <ckpt>/samples_<N>_<sampler><steps>_cfg<S>_seed<K>).
//
// OpenMP wait policy: unless OMP_WAIT_POLICY is set, dittrain re-executes
// itself once with OMP_WAIT_POLICY=passive (core/omp_policy.h; 11.6 -> 45
// img/s on a loaded 2-core machine); OMP_WAIT_POLICY=active keeps spinning.
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include "core/config.h"
#include "core/log.h"
#include "core/omp_policy.h"
#include "diffusion/dit_train_config.h"
#include "diffusion/dit_trainer.h"

#ifndef VT_SOURCE_DIR
#define VT_SOURCE_DIR "."
#endif

namespace {

std::string find_config(const std::string& name) {
  namespace fs = std::filesystem;
  if (fs::exists(name)) return name;
  for (const fs::path& p : {fs::path(VT_SOURCE_DIR) / "configs" / name, fs::path("configs") / name})
    if (fs::exists(p)) return p.string();
  throw vt::ConfigError("config '" + name + "' not found (looked in ., configs/ and " VT_SOURCE_DIR "/configs)");
}

int usage() {
  std::cerr << "usage: dittrain CONFIG.yaml [key.path=value ...]\n"
               "       dittrain sample CONFIG.yaml ckpt=DIR [num_samples=N] [steps=250] [cfg_scale=S] [seed=K]\n"
               "                [sampler=ddpm|ddim] [eta=E] [batch=B] [weights=ema|model] [out=PATH]\n\n"
               "config keys:\n"
            << vt::dittrain_schema().help_text();
  return 2;
}

int run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "-h" || args[0] == "--help") return usage();
  const bool sample = args[0] == "sample";
  if (sample) args.erase(args.begin());
  if (args.empty()) return usage();
  const std::string config_path = find_config(args[0]);
  std::vector<std::string> overrides;
  std::map<std::string, std::string> opts;
  static const std::set<std::string> sample_keys = {"ckpt",   "num_samples", "steps", "cfg_scale", "seed",
                                                    "sampler", "eta",        "batch", "weights",   "out"};
  for (size_t i = 1; i < args.size(); ++i) {
    const auto eq = args[i].find('=');
    const std::string key = eq == std::string::npos ? args[i] : args[i].substr(0, eq);
    if (sample && sample_keys.count(key)) {
      opts[key] = eq == std::string::npos ? "" : args[i].substr(eq + 1);
    } else {
      overrides.push_back(args[i]);
    }
  }
  if (sample) overrides.push_back("run.resume=none");
  const vt::Config cfg = vt::Config::load(config_path, vt::dittrain_schema(), overrides);
  const vt::DitTrainConfig tc = vt::dit_train_config(cfg);
  if (!sample) {
    vt::DitTrainer trainer(tc);
    trainer.train();
    return 0;
  }
  if (!opts.count("ckpt")) throw vt::ConfigError("sample: ckpt=DIR is required");
  vt::SampleOptions so = tc.grid;
  so.steps = opts.count("steps") ? std::stoi(opts["steps"]) : 250;
  so.sampler = opts.count("sampler") ? opts["sampler"] : "ddpm";  // DiT sample.py: 250 DDPM steps
  if (opts.count("cfg_scale")) so.cfg_scale = std::stod(opts["cfg_scale"]);
  if (opts.count("seed")) so.seed = std::stoull(opts["seed"]);
  if (opts.count("eta")) so.eta = std::stod(opts["eta"]);
  if (opts.count("batch")) so.batch = std::stoi(opts["batch"]);
  const int64_t n = opts.count("num_samples") ? std::stoll(opts["num_samples"]) : 64;
  const std::string weights = opts.count("weights") ? opts["weights"] : "ema";
  if (weights != "ema" && weights != "model") throw vt::ConfigError("sample: weights must be ema or model");
  char cfgs[32];
  std::snprintf(cfgs, sizeof cfgs, "%g", so.cfg_scale);
  const std::string out = opts.count("out") ? opts["out"]
                                            : (std::filesystem::path(opts["ckpt"]) /
                                               ("samples_" + std::to_string(n) + "_" + so.sampler +
                                                std::to_string(so.steps) + "_cfg" + cfgs + "_seed" +
                                                std::to_string(so.seed)))
                                                  .string();
  vt::dit_sample_to_files(tc, opts["ckpt"], n, so, out, weights == "ema");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  vt::reexec_with_passive_omp_wait(argv);
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    vt::log().error("{}", e.what());
    return 1;
  }
}
