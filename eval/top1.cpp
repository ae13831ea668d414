#include "eval/top1.h"

#include <omp.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "core/dist.h"
#include "data_pipeline/dataset.h"
#include "data_pipeline/packed_shards.h"
#include "eval/classifier_checkpoint.h"
#include "vision/split_dataset.h"

namespace fs = std::filesystem;

namespace vt {

Top1Request parse_top1_args(const std::vector<std::string>& args) {
  Top1Request r;
  if (args.empty() || args[0].find('=') != std::string::npos)
    throw std::invalid_argument("top1 needs CONFIG.yaml as its first argument");
  r.config = args[0];
  bool have_ckpt = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    const size_t eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("argument '" + a +
                                  "' is not key=value (ckpt=DIR, split=NAME, ema=true|false, prune_last=K, key.path=value)");
    const std::string k = a.substr(0, eq), v = a.substr(eq + 1);
    if (k == "ckpt") {
      r.ckpt = v, have_ckpt = true;
    } else if (k == "split") {
      if (v.empty()) throw std::invalid_argument("split= needs a value (val, train or a folder of data.root)");
      r.split = v;
    } else if (k == "ema") {
      if (v == "true" || v == "1") r.ema = true;
      else if (v == "false" || v == "0") r.ema = false;
      else throw std::invalid_argument("ema must be true or false, got '" + v + "'");
    } else if (k == "prune_last") {
      size_t used = 0;
      long long n = -1;
      try {
        n = std::stoll(v, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (v.empty() || used != v.size() || n < 0)
        throw std::invalid_argument("prune_last must be a block count >= 0, got '" + v + "'");
      r.prune_last = n;
    } else {
      r.overrides.push_back(a);
    }
  }
  if (!have_ckpt || r.ckpt.empty()) throw std::invalid_argument("top1 needs ckpt=DIR (a step_<N>/ checkpoint directory)");
  return r;
}

namespace {

// Immediate sub-folders, sorted as ImageFolder sorts its classes; cheap even
// for ImageNet (no walk of the files).
std::vector<std::string> class_folders(const std::string& dir) {
  std::vector<std::string> c;
  for (const auto& e : fs::directory_iterator(dir, fs::directory_options::follow_directory_symlink))
    if (e.is_directory()) c.push_back(e.path().filename().string());
  std::sort(c.begin(), c.end());
  return c;
}

}  // namespace

Top1Report run_top1(const Top1Request& req, const std::vector<std::string>& configs_dirs,
                    const std::function<void(int64_t, int64_t)>& progress) {
  const FoundConfig fc = load_vtrain_config_for(req.ckpt, req.ema, req.config, configs_dirs, req.overrides);
  LoadedClassifier lc = load_classifier(fc.cfg, fc.path, req.ckpt, req.ema);
  const TrainOptions& o = lc.options;
  // The config's device and precision keys (train/device_choice.h); the
  // weights are loaded on the host, then moved.
  apply_device_choice(o.compute);
  lc.model->to(o.compute.device);
  if (o.compute.bf16()) lc.model->params().enable_bf16_copy();
  if (o.threads > 0) omp_set_num_threads(o.threads);

  const std::string split = req.split == "val" ? o.val_split : req.split == "train" ? o.train_split : req.split;
  const std::string dir = o.data_root + "/" + split;
  if (!fs::is_directory(dir))
    throw std::runtime_error("split '" + req.split + "': folder '" + dir + "' does not exist (data.root = '" +
                             o.data_root + "' from " + fc.path + ")");
  // data.format selects the reader as in training (vision/split_dataset.h).
  const std::shared_ptr<Dataset> ds = open_split(o, "split '" + req.split + "'", split, deit_eval_pipeline(o));
  // Labels are class-folder positions: they mean the classes the model was
  // trained on only if the folders are the training split's (a packed
  // split's manifest lists its classes).
  const std::string train_dir = o.data_root + "/" + o.train_split;
  const bool packed = o.data_format == "shards";
  if (split != o.train_split && fs::is_directory(train_dir)) {
    const std::vector<std::string> train_classes =
        packed ? read_shard_manifest(train_dir).classes : class_folders(train_dir);
    if (train_classes != split_classes(*ds))
      throw std::runtime_error("split folder '" + dir + "' has other " + (packed ? "classes" : "class folders") +
                               " than the training split '" + train_dir + "' (" + std::to_string(ds->num_classes()) +
                               " vs " + std::to_string(train_classes.size()) + "): labels would not match");
  }
  if (ds->num_classes() > o.vit.num_classes)
    throw std::runtime_error("split folder '" + dir + "' has " + std::to_string(ds->num_classes()) +
                             " classes but the checkpoint's head has " + std::to_string(o.vit.num_classes));

  const int64_t depth = o.vit.backbone.depth;
  if (req.prune_last > depth)
    throw std::invalid_argument("prune_last=" + std::to_string(req.prune_last) + ": must be in [0, " +
                                std::to_string(depth) + "] (the model's depth, from " + fc.path + ")");
  lc.model->backbone().set_active_depth(depth - req.prune_last);

  Top1Report rep;
  rep.blocks_run = depth - req.prune_last;
  rep.depth = depth;
  // Data parallel: each rank evaluates its shard, the counts are summed.
  EvalOptions eo = eval_options(o);
  eo.rank = dist().rank(), eo.world = dist().world();
  rep.result = reduce_eval_result(evaluate_classifier(*lc.model, ds, eo, progress));
  rep.config_path = fc.path;
  rep.device = o.compute.describe();
  rep.weights_file = lc.weights_file;
  rep.split_dir = dir;
  rep.num_classes = o.vit.num_classes;
  return rep;
}

}  // namespace vt
