// Progress display for long loops (training epochs, sampling, evaluation).
//
// On a terminal (isatty of the output) it redraws one line in place with
// '\r' at most every `redraw_s` seconds; otherwise (logs, CI) it prints a
// plain line every `interval_s` seconds or every `interval_steps` steps,
// whichever comes first, plus a final line at finish() (unless the last
// periodic line already showed the final step). A line reads
//
//   train 120/1000 (12.0%) | 256.4 img/s | loss 2.3145 | lr 0.0005 | ETA 0:01:23
//
// rate = items processed since construction / elapsed seconds, where an item
// is `items_per_step` per step (e.g. images per batch); ETA = remaining items
// / rate, shown as H:MM:SS ("?" before the first rate).
#pragma once
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace vt {

struct ProgressOptions {
  double items_per_step = 1;
  std::string unit = "it";      // rate shown as "<unit>/s"
  double interval_s = 10;       // non-terminal: seconds between lines
  int64_t interval_steps = 0;   // non-terminal: steps between lines (0: off)
  double redraw_s = 0.1;        // terminal: minimum seconds between redraws
  std::FILE* out = stderr;       // nullptr: silent (data-parallel ranks other than 0)
  int tty = -1;                 // -1: isatty(out); 0/1 force (tests)
  std::function<double()> clock;  // seconds; default steady_clock (tests inject)
};

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total, ProgressOptions opt = {});
  ~ProgressBar();  // calls finish() if not done

  // `step` is the number of steps completed (1..total).
  void update(int64_t step, const std::vector<std::pair<std::string, double>>& scalars = {});
  // Prints the final state (and a newline on a terminal). Idempotent.
  void finish();

  // The status line for the current state (no '\r' or newline).
  std::string line() const;

 private:
  void print(bool final);

  std::string label_;
  int64_t total_;
  ProgressOptions opt_;
  bool tty_;
  double start_, last_print_ = -1e300;
  int64_t step_ = 0, last_step_ = 0;
  std::vector<std::pair<std::string, double>> scalars_;
  bool finished_ = false;
};

// "H:MM:SS" for non-negative seconds.
std::string format_duration(double seconds);

}  // namespace vt
