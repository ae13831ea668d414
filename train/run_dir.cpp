#include "train/run_dir.h"

#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "core/dist.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/tensorboard/event_writer.h"

namespace vt {

namespace fs = std::filesystem;

RunDirectory::RunDirectory(const std::string& out_dir, const std::string& name, const std::string& resume)
    : path_((fs::path(out_dir) / name).string()), writer_(dist().is_root()) {
  // Before reading its checkpoints: another run may be writing them.
  if (writer_ && fs::is_directory(path_)) lock_ = RunDirLock(path_);
  if (resume == "auto") {
    if (auto latest = latest_checkpoint(path_)) resume_path_ = *latest;
  } else if (resume == "never" || resume == "none") {
    // Training from step 1 over an old run's step_<N> would leave a mix of both.
    if (!list_checkpoints(path_).empty())
      throw std::runtime_error("resume=never but run directory '" + path_ +
                               "' already holds checkpoints; choose another name or resume=auto");
  } else {
    resume_path_ = resume;
    refuse_later_checkpoints();
  }
  last_ckpt_ = resume_path_;
}

// A resume from step K of this very run directory while it holds later
// checkpoints would put two timelines in one directory: ckpt.keep_last
// keeps the highest steps, so it would remove the new run's checkpoints and
// keep the abandoned ones, and resume: auto would later continue the
// abandoned timeline. Refused, naming them, so nothing is lost.
void RunDirectory::refuse_later_checkpoints() const {
  std::error_code ec;
  fs::path ckpt = fs::path(resume_path_).lexically_normal();
  if (!ckpt.has_filename()) ckpt = ckpt.parent_path();  // a trailing separator
  const fs::path parent = ckpt.parent_path();
  if (parent.empty() || !fs::is_directory(path_, ec) || !fs::equivalent(parent, path_, ec)) return;
  const auto all = list_checkpoints(path_);
  int64_t step = -1;
  for (const auto& [s, dir] : all)
    if (fs::equivalent(dir, ckpt, ec)) step = s;
  if (step < 0) return;  // not one of the directory's checkpoints: its own error comes later
  std::string later;
  int n = 0;
  for (const auto& [s, dir] : all)
    if (s > step && n++ < 5) later += (later.empty() ? "" : ", ") + fs::path(dir).filename().string();
  if (n == 0) return;
  if (n > 5) later += ", ... (" + std::to_string(n) + " in all)";
  throw std::runtime_error("resume=" + resume_path_ + " is step " + std::to_string(step) + " of run directory '" +
                           path_ + "', which also holds later checkpoints (" + later +
                           "): continuing there would mix two runs (ckpt.keep_last would remove the new "
                           "checkpoints and keep those, resume: auto would continue those); move them out of '" +
                           path_ + "', or train this run under another name (name=...)");
}

RunDirectory::~RunDirectory() { close(); }

namespace {

// config.<step>.yaml, or config.<step>.<k>.yaml when that is taken (a run
// resumed twice from one checkpoint).
fs::path free_config_name(const fs::path& dir, int64_t step) {
  const std::string stem = "config." + std::to_string(step);
  fs::path p = dir / (stem + ".yaml");
  for (int k = 1; fs::exists(p); ++k) p = dir / (stem + "." + std::to_string(k) + ".yaml");
  return p;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool has_event_files(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().find("tfevents") != std::string::npos) return true;
  return false;
}

}  // namespace

void RunDirectory::warn(const std::string& message) {
  if (opened_ || !writer_) log().warn("{}", message);
  else pending_warnings_.push_back(message);
}

void RunDirectory::open(const Config& resolved, bool tensorboard, int64_t start_step) {
  if (opened_) return;
  // Collective: the other ranks wait until rank 0 has created the files
  // (they append their errors to its log.txt).
  if (!writer_) {
    dist().barrier();
    opened_ = true;
    return;
  }
  struct BarrierAtExit {
    ~BarrierAtExit() { dist().barrier(); }
  } barrier_at_exit;  // also when opening fails: the others must not hang here
  fs::create_directories(path_);
  if (!lock_.held()) lock_ = RunDirLock(path_);  // a run that started at the same moment
  log_to_file((fs::path(path_) / "log.txt").string());
  opened_ = true;
  for (const std::string& w : pending_warnings_) log().warn("{}", w);
  pending_warnings_.clear();
  const fs::path dir(path_);
  const std::string config_text = resolved.to_yaml();
  if (fs::exists(dir / "config.yaml") && read_text(dir / "config.yaml") != config_text) {
    const fs::path kept = free_config_name(dir, start_step);
    fs::rename(dir / "config.yaml", kept);
    // Info, not a warning: extending train.max_steps changes it too; a
    // change that alters the model or the recipe has the trainers' own
    // "written with a different config" warning.
    log().info("config.yaml: this run's config differs from the one in {}; that one is kept as {}", path_,
               kept.filename().string());
  }
  resolved.save((dir / "config.yaml").string());
  const std::string metrics_path = (dir / "metrics.jsonl").string();
  if (const int64_t dropped = drop_metrics_after(metrics_path, start_step))
    log().info("metrics.jsonl: dropped {} records after step {}, which this run computes again", dropped, start_step);
  start_step_ = start_step;
  start_step_splits_ = metrics_splits_at(metrics_path, start_step);
  metrics_ = std::make_unique<MetricsWriter>(metrics_path);
  if (tensorboard) {
    const bool earlier = has_event_files(dir / "tb");
    tb_ = std::make_unique<TensorBoardWriter>((dir / "tb").string());
    if (earlier) tb_->add_session_start(start_step + 1);
  }
}

void RunDirectory::write_metrics(int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
                                 const std::vector<std::pair<std::string, std::string>>& tags,
                                 const std::string& tb_prefix) {
  if (!opened_) throw std::logic_error("RunDirectory::write_metrics before open()");
  if (!writer_) return;
  if (step == start_step_) {
    std::string split;
    for (const auto& [k, v] : tags)
      if (k == "split") split = v;
    if (start_step_splits_.count(split)) {
      log().info("metrics.jsonl holds the {} record of step {} already (this run continues from that step); "
                 "not written again", split.empty() ? std::string("untagged") : "'" + split + "'", step);
      return;
    }
  }
  metrics_->write(step, scalars, tags);
  if (tb_) {
    std::vector<std::pair<std::string, double>> named;
    for (const auto& [k, v] : scalars) named.emplace_back(tb_prefix.empty() ? k : tb_prefix + "/" + k, v);
    tb_->add_scalars(named, step);
    tb_->flush();
  }
}

std::string RunDirectory::save(int64_t step, const CheckpointData& data, int keep_last, int64_t keep_step) {
  // Several ranks: the others wait here, however long rank 0's write takes.
  struct WaitForRoot {
    ~WaitForRoot() {
      if (!std::uncaught_exceptions()) dist().barrier("waiting for rank 0's checkpoint write", /*timed=*/false);
    }
  } wait;
  if (!writer_) return last_ckpt_ = (fs::path(path_) / ("step_" + std::to_string(step))).string();
  try {
    last_ckpt_ = save_checkpoint(path_, step, data);
    write_failure_.reset();
  } catch (const CheckpointWriteError& e) {
    const std::string prev =
        last_ckpt_.empty() ? "there is no earlier checkpoint" : "the newest complete checkpoint is " + last_ckpt_;
    const std::string msg = std::string(e.what()) + "; " + prev;
    if (!retry_write_) throw CheckpointWriteError(msg, e.bytes_needed());
    log().error("{}; retrying at the next checkpoint (ckpt.on_write_error: retry)", msg);
    write_failure_ = std::make_unique<CheckpointWriteError>(msg, e.bytes_needed());
    return last_ckpt_;
  }
  if (keep_last > 0) {
    for (const KeptCheckpointDir& k : prune_checkpoints(path_, keep_last, keep_step)) {
      std::string names;
      for (size_t i = 0; i < k.other.size() && i < 5; ++i) names += (i ? ", " : "") + k.other[i];
      if (k.other.size() > 5) names += ", ... (" + std::to_string(k.other.size()) + " in all)";
      log().info("checkpoint {} removed (ckpt.keep_last={}); the directory is kept: it holds files the "
                 "trainer did not write ({})",
                 k.dir, keep_last, names);
    }
  } else {
    remove_stale_checkpoint_temps(path_);
  }
  return last_ckpt_;
}

void RunDirectory::close_with_error(const std::string& message) {
  if (opened_ && writer_) log_file_only(spdlog::level::err, message);
  // Another rank's failure goes into rank 0's log.txt too (shared file
  // system; one appended line), as the job is about to be aborted.
  if (opened_ && !writer_) {
    std::ofstream f(fs::path(path_) / "log.txt", std::ios::app);
    if (f) f << "[" << dist().rank() << " of " << dist().world() << "] [error] " << message << "\n";
  }
  close();
}

void RunDirectory::throw_if_write_failed() {
  if (!write_failure_) return;
  const CheckpointWriteError e = *write_failure_;
  write_failure_.reset();
  close_with_error(std::string("run failed: ") + e.what());
  throw e;
}

void RunDirectory::close() {
  if (!opened_) return;
  throw_if_write_failed();  // the run's last checkpoint was never written
  opened_ = false;
  if (!writer_) return;
  metrics_.reset();
  tb_.reset();
  log_close_file();
}

std::string resume_mismatch_hint(const std::string& checkpoint, const std::map<std::string, Tensor>& model,
                                 WeightsKind expected) {
  std::string hint;
  const WeightsKind kind = weights_kind(model);
  if (kind != expected && kind != WeightsKind::Unknown) hint += "; it holds " + weights_kind_text(kind);
  fs::path dir = fs::path(checkpoint);
  if (dir.filename().empty()) dir = dir.parent_path();  // "step_10/"
  const fs::path run_config = dir.parent_path() / "config.yaml";
  std::error_code ec;
  if (fs::is_regular_file(run_config, ec))
    hint += "; it was written by the run configured by " + run_config.string() + ": its model.* keys build it";
  return hint;
}

}  // namespace vt
