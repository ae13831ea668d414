// Metrics as JSON lines (runs/<name>/metrics.jsonl): one object per write,
// {"step": 100, "loss": 2.31, "lr": 0.0005, ...}, fields in the order given,
// flushed after every line so a crash loses nothing already written. The file
// is opened in append mode so a resumed run continues the same file.
// Non-finite values are written as null (JSON has no NaN/Inf). Thread-safe.
#pragma once
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace vt {

class MetricsWriter {
 public:
  // Throws std::runtime_error naming the path when it cannot be opened.
  explicit MetricsWriter(const std::string& path);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  void write(int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
             const std::vector<std::pair<std::string, std::string>>& strings = {});
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  std::mutex mu_;
};

// Rewrites the metrics file at `path` (atomically) without its lines whose
// "step" is greater than `step`: a run resumed from step_<step> computes
// those steps again, and would otherwise leave two records of each (as
// PyTorch's SummaryWriter(purge_step=step + 1) hides them in TensorBoard).
// Lines that are not a JSON object with an integer "step" are kept. Returns
// the number of lines dropped; 0 (and no write) when there is no file or
// nothing to drop. Throws std::runtime_error naming the path when it cannot
// be read or written.
int64_t drop_metrics_after(const std::string& path, int64_t step);

// The "split" values of the lines of the metrics file at `path` whose
// "step" is `step` ("" for a line without one); empty when there is no file.
// A run that continues from step_<step> and evaluates that step again
// (a finished run rerun) appends no second record of a split listed here
// (train/run_dir.h). Throws std::runtime_error naming the path when it
// cannot be read.
std::set<std::string> metrics_splits_at(const std::string& path, int64_t step);

// The line write() appends (without the newline).
std::string metrics_line(int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
                         const std::vector<std::pair<std::string, std::string>>& strings = {});

}  // namespace vt
