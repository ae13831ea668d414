// A training run's directory <out_dir>/<name>/, one layout for vtrain and
// dittrain:
//   config.yaml     the resolved config (absolute paths)
//   config.<S>.yaml the config before a resume from step S changed it
//   log.txt         the log (spdlog, also on the console)
//   metrics.jsonl   core/metrics.h lines
//   tb/             TensorBoard event files (log.tensorboard)
//   step_<N>/       checkpoints (core/checkpoint_dir.h, state.json: train/run_state.h)
//   .lock           held by the run writing the directory (train/run_dir_lock.h)
// Construction decides where to resume from (resume = auto: the newest
// complete checkpoint; never: none, and an error when the directory already
// holds checkpoints; a directory: that checkpoint) and creates nothing, so a
// setup error leaves no run directory. open() creates the files.
//
// One writer per run directory (train/run_dir_lock.h): an existing directory
// is locked at construction, before its checkpoints are read, and a new one
// at open(); a second run on the same directory is refused with an error
// naming the holder's pid and host. The lock lives as long as the object
// (the OS drops it when the process dies).
//
// Data-parallel training (core/dist.h): only rank 0 writes. On the other
// ranks open/write_metrics/save/close are no-ops (save still returns and
// remembers the path rank 0 writes); every rank resolves the same resume
// checkpoint here, before rank 0 writes anything.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/checkpoint_dir.h"
#include "core/checkpoint_kind.h"
#include "core/config.h"
#include "train/run_dir_lock.h"

namespace vt {

class MetricsWriter;
class TensorBoardWriter;

class RunDirectory {
 public:
  // Throws std::runtime_error for resume=never over existing checkpoints,
  // for a resume from a checkpoint of this directory that holds later ones
  // (two timelines in one directory), and when another run holds the
  // directory.
  RunDirectory(const std::string& out_dir, const std::string& name, const std::string& resume);
  ~RunDirectory();
  RunDirectory(const RunDirectory&) = delete;
  RunDirectory& operator=(const RunDirectory&) = delete;

  const std::string& path() const { return path_; }
  const std::string& resume_path() const { return resume_path_; }  // "" when starting fresh

  // Creates the directory, log.txt, config.yaml (`resolved`), metrics.jsonl
  // and (tensorboard) tb/. Idempotent. Collective with several ranks
  // (every rank calls it; rank 0 writes).
  //
  // `start_step` is the step the run continues from (0: a fresh start). The
  // records an earlier attempt wrote after it are computed again, so they
  // are dropped: metrics.jsonl lines with a greater step, and in TensorBoard
  // by a restart event at start_step + 1 (TensorBoardWriter::
  // add_session_start). A config.yaml that differs from `resolved` is kept
  // as config.<start_step>.yaml (config.<start_step>.<k>.yaml when taken),
  // noted in log.txt, before the new one is written.
  void open(const Config& resolved, bool tensorboard, int64_t start_step);
  // A warning (e.g. "resuming from a checkpoint written with a different
  // config") for the console and log.txt: logged now when open, else when
  // open() has attached log.txt.
  void warn(const std::string& message);
  bool is_open() const { return opened_; }
  // Scalars at `step` to metrics.jsonl (with `tags`, e.g. split) and, under
  // "<tb_prefix>/<name>", to TensorBoard (flushed). open() first. A record
  // of the step the run continues from whose split the file holds already
  // for that step (a finished run rerun evaluates its last step again) is
  // not written a second time (logged).
  void write_metrics(int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
                     const std::vector<std::pair<std::string, std::string>>& tags, const std::string& tb_prefix);
  // Writes step_<step>; then keeps the newest keep_last (0: all) and step
  // keep_step (-1: none). Returns the checkpoint's path. Collective with
  // several ranks: every rank calls it and waits (without dist.timeout_s)
  // until rank 0 has written. A write that fails (core/checkpoint_dir.h:
  // disk full, quota, I/O error) removes the partial checkpoint and leaves
  // the others untouched; then it throws CheckpointWriteError (naming the
  // path, the bytes needed and the newest complete checkpoint), or, with
  // set_retry_checkpoint_write(true), logs that error, returns
  // last_checkpoint() unchanged, and the next save tries again (when the
  // last save of a run failed, close() and throw_if_write_failed() throw
  // that CheckpointWriteError, closing the files).
  std::string save(int64_t step, const CheckpointData& data, int keep_last, int64_t keep_step = -1);
  // ckpt.on_write_error: retry (true) or stop (false, the default).
  void set_retry_checkpoint_write(bool retry) { retry_write_ = retry; }
  // The newest checkpoint written or resumed from ("" when none).
  const std::string& last_checkpoint() const { return last_ckpt_; }
  // Appends `message` to log.txt only (the console already showed it) and
  // closes the files: for a run that failed. On ranks other than 0 the
  // line (with the rank) is appended to rank 0's log.txt.
  void close_with_error(const std::string& message);
  void close();
  void throw_if_write_failed();

 private:
  void refuse_later_checkpoints() const;
  std::string path_, resume_path_, last_ckpt_;
  bool writer_ = true;  // rank 0
  bool opened_ = false;
  bool retry_write_ = false;
  std::unique_ptr<CheckpointWriteError> write_failure_;  // the last save's, under retry
  std::unique_ptr<MetricsWriter> metrics_;
  int64_t start_step_ = -1;
  std::set<std::string> start_step_splits_;  // splits metrics.jsonl records at start_step_ (open())
  std::unique_ptr<TensorBoardWriter> tb_;
  RunDirLock lock_;  // rank 0 only
  std::vector<std::string> pending_warnings_;  // warn() before open()
};

// The end of the error for a resume checkpoint whose model does not fit
// this config's: what the weights are when they are not `expected`
// (core/checkpoint_kind.h), and the config.yaml of the run that wrote them
// (next to step_<N>/), whose model.* keys built them. "" when neither
// applies.
std::string resume_mismatch_hint(const std::string& checkpoint, const std::map<std::string, Tensor>& model,
                                 WeightsKind expected);

}  // namespace vt
