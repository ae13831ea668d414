#include "eval/classifier_checkpoint.h"

#include <filesystem>
#include <stdexcept>

#include "core/config_paths.h"
#include "core/safetensors.h"
#include "core/checkpoint_dir.h"
#include "core/checkpoint_kind.h"

namespace fs = std::filesystem;

namespace vt {

FoundConfig load_vtrain_config(const std::string& config_arg, const std::vector<std::string>& configs_dirs,
                               const std::vector<std::string>& overrides) {
  FoundConfig f;
  f.path = find_config(config_arg, configs_dirs);
  f.cfg = Config::load(f.path, vtrain_schema(), overrides);
  return f;
}

namespace {

std::string weights_file_of(std::string ckpt, bool ema, std::string* dir) {
  if (ckpt.empty()) throw std::runtime_error("no checkpoint given (ckpt=DIR)");
  if (!fs::exists(ckpt)) throw std::runtime_error("checkpoint '" + ckpt + "' does not exist");
  if (fs::is_regular_file(ckpt)) {
    if (ema)
      throw std::runtime_error("checkpoint '" + ckpt + "' is a single weights file; ema=true needs a step_<N>/ directory");
    return ckpt;
  }
  if (!fs::is_directory(ckpt)) throw std::runtime_error("checkpoint '" + ckpt + "' is neither a directory nor a file");
  // A run directory stands for its newest complete checkpoint.
  if (!fs::exists(ckpt + "/model.safetensors"))
    if (auto latest = latest_checkpoint(ckpt)) ckpt = *latest;
  *dir = ckpt;
  const std::string file = ckpt + (ema ? "/ema.safetensors" : "/model.safetensors");
  if (!fs::is_regular_file(file)) {
    if (ema)
      throw std::runtime_error("checkpoint '" + ckpt +
                               "' has no ema.safetensors (EMA requested with ema=true; was the run trained with "
                               "train.ema: false?)");
    throw std::runtime_error("checkpoint '" + ckpt + "' has no model.safetensors");
  }
  return file;
}

}  // namespace

FoundConfig load_vtrain_config_for(const std::string& ckpt, bool ema, const std::string& config_arg,
                                   const std::vector<std::string>& configs_dirs,
                                   const std::vector<std::string>& overrides) {
  try {
    return load_vtrain_config(config_arg, configs_dirs, overrides);
  } catch (const ConfigError&) {
    // Only now is the weights file read: a config that loads costs nothing extra.
    WeightsKind kind = WeightsKind::Unknown;
    std::string file, dir;
    try {
      file = weights_file_of(ckpt, ema, &dir);
      kind = weights_kind(load_safetensors(file));
    } catch (const std::exception&) {
      kind = WeightsKind::Unknown;  // the checkpoint's own problem: the config error stands
    }
    if (kind == WeightsKind::VitClassifier || kind == WeightsKind::Unknown) throw;
    throw std::runtime_error("checkpoint '" + file + "' holds " + weights_kind_text(kind) +
                             ", not a vtrain classifier (its config '" + config_arg + "' is not a vtrain config)");
  }
}

LoadedClassifier load_classifier(const Config& cfg, const std::string& config_path, const std::string& ckpt,
                                 bool ema) {
  LoadedClassifier out;
  out.options = train_options(cfg, config_path);
  out.weights_file = weights_file_of(ckpt, ema, &out.checkpoint_dir);
  const std::map<std::string, Tensor> dict = load_safetensors(out.weights_file);
  const WeightsKind kind = weights_kind(dict);
  if (kind != WeightsKind::VitClassifier && kind != WeightsKind::Unknown)
    throw std::runtime_error("checkpoint '" + out.weights_file + "' holds " + weights_kind_text(kind) +
                             ", not a vtrain classifier");
  VitConfig& vc = out.options.vit;
  if (vc.num_classes == 0) {
    auto it = dict.find("head.weight");
    if (it == dict.end() || it->second.dim() != 2)
      throw std::runtime_error("'" + out.weights_file + "' has no 2-D head.weight to take model.num_classes from (config '" +
                               config_path + "' leaves it 0); set model.num_classes=K");
    vc.num_classes = it->second.shape()[0];
  }
  try {
    out.model = std::make_unique<VisionTransformer>(vc);
  } catch (const std::invalid_argument& e) {
    throw ConfigError("config '" + config_path + "': " + e.what());
  }
  try {
    out.model->params().load(dict, /*strict=*/true);
  } catch (const std::exception& e) {
    // The run that wrote it says which model it is.
    const std::string run_config = run_config_of_checkpoint(ckpt);
    std::error_code ec;
    const bool other = !run_config.empty() && !fs::equivalent(run_config, config_path, ec);
    throw std::runtime_error("checkpoint '" + out.weights_file + "' does not fit the model of config '" + config_path +
                             "': " + e.what() +
                             (other ? "; it was trained with " + run_config + ": give that file as CONFIG" : ""));
  }
  return out;
}

std::string run_config_of_checkpoint(const std::string& ckpt) {
  fs::path p = fs::path(ckpt);
  if (p.filename().empty()) p = p.parent_path();  // "step_10/" -> "step_10"
  std::error_code ec;
  if (fs::is_regular_file(p, ec)) p = p.parent_path();  // step_10/model.safetensors
  if (fs::is_regular_file(p / "config.yaml", ec)) return (p / "config.yaml").string();  // a run directory
  const fs::path cand = p.parent_path() / "config.yaml";
  return fs::is_regular_file(cand, ec) ? cand.string() : std::string();
}

}  // namespace vt
