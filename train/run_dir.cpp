#include "train/run_dir.h"

#include <filesystem>
#include <stdexcept>

#include "core/log.h"
#include "core/metrics.h"
#include "core/tensorboard/event_writer.h"

namespace vt {

namespace fs = std::filesystem;

RunDirectory::RunDirectory(const std::string& out_dir, const std::string& name, const std::string& resume)
    : path_((fs::path(out_dir) / name).string()) {
  if (resume == "auto") {
    if (auto latest = latest_checkpoint(path_)) resume_path_ = *latest;
  } else if (resume == "never" || resume == "none") {
    // Training from step 1 over an old run's step_<N> would leave a mix of both.
    if (!list_checkpoints(path_).empty())
      throw std::runtime_error("resume=never but run directory '" + path_ +
                               "' already holds checkpoints; choose another name or resume=auto");
  } else {
    resume_path_ = resume;
  }
  last_ckpt_ = resume_path_;
}

RunDirectory::~RunDirectory() { close(); }

void RunDirectory::open(const Config& resolved, bool tensorboard) {
  if (opened_) return;
  fs::create_directories(path_);
  log_to_file((fs::path(path_) / "log.txt").string());
  opened_ = true;
  resolved.save((fs::path(path_) / "config.yaml").string());
  metrics_ = std::make_unique<MetricsWriter>((fs::path(path_) / "metrics.jsonl").string());
  if (tensorboard) tb_ = std::make_unique<TensorBoardWriter>((fs::path(path_) / "tb").string());
}

void RunDirectory::write_metrics(int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
                                 const std::vector<std::pair<std::string, std::string>>& tags,
                                 const std::string& tb_prefix) {
  if (!opened_) throw std::logic_error("RunDirectory::write_metrics before open()");
  metrics_->write(step, scalars, tags);
  if (tb_) {
    std::vector<std::pair<std::string, double>> named;
    for (const auto& [k, v] : scalars) named.emplace_back(tb_prefix.empty() ? k : tb_prefix + "/" + k, v);
    tb_->add_scalars(named, step);
    tb_->flush();
  }
}

std::string RunDirectory::save(int64_t step, const CheckpointData& data, int keep_last, int64_t keep_step) {
  last_ckpt_ = save_checkpoint(path_, step, data);
  if (keep_last > 0) prune_checkpoints(path_, keep_last, keep_step);
  else remove_stale_checkpoint_temps(path_);
  return last_ckpt_;
}

void RunDirectory::close_with_error(const std::string& message) {
  if (opened_) log_file_only(spdlog::level::err, message);
  close();
}

void RunDirectory::close() {
  if (!opened_) return;
  metrics_.reset();
  tb_.reset();
  log_close_file();
  opened_ = false;
}

}  // namespace vt
