#include "core/progress.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

namespace vt {

std::string format_duration(double seconds) {
  if (!(seconds >= 0) || !std::isfinite(seconds)) return "?";
  long long s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

static std::string fmt_scalar(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.5g", v);
  return buf;
}

ProgressBar::ProgressBar(std::string label, int64_t total, ProgressOptions opt)
    : label_(std::move(label)), total_(total), opt_(std::move(opt)) {
  if (!opt_.clock)
    opt_.clock = [] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
    };
  tty_ = opt_.tty >= 0 ? opt_.tty != 0 : opt_.out && ::isatty(::fileno(opt_.out)) != 0;
  start_ = opt_.clock();
}

ProgressBar::~ProgressBar() {
  try {
    finish();
  } catch (...) {
  }
}

std::string ProgressBar::line() const {
  const double elapsed = opt_.clock() - start_;
  std::string s = label_ + " " + std::to_string(step_);
  if (total_ > 0) {
    char pct[32];
    std::snprintf(pct, sizeof pct, " (%.1f%%)", 100.0 * static_cast<double>(step_) / static_cast<double>(total_));
    s += "/" + std::to_string(total_) + pct;
  }
  const double rate = elapsed > 0 ? static_cast<double>(step_) * opt_.items_per_step / elapsed : 0;
  char r[48];
  std::snprintf(r, sizeof r, "%.1f", rate);
  s += std::string(" | ") + r + " " + opt_.unit + "/s";
  for (const auto& [k, v] : scalars_) s += " | " + k + " " + fmt_scalar(v);
  if (total_ > 0) {
    const double remaining = static_cast<double>(total_ - step_) * opt_.items_per_step;
    s += " | ETA " + (rate > 0 ? format_duration(remaining / rate) : std::string("?"));
  }
  return s;
}

void ProgressBar::print(bool final) {
  if (!opt_.out) return;
  const std::string l = line();
  if (tty_) std::fprintf(opt_.out, "\r%s\x1b[K%s", l.c_str(), final ? "\n" : "");
  else std::fprintf(opt_.out, "%s\n", l.c_str());
  std::fflush(opt_.out);
  last_print_ = opt_.clock();
  last_step_ = step_;
}

void ProgressBar::update(int64_t step, const std::vector<std::pair<std::string, double>>& scalars) {
  step_ = step;
  if (!scalars.empty()) scalars_ = scalars;
  const double now = opt_.clock();
  if (tty_) {
    if (now - last_print_ >= opt_.redraw_s) print(false);
    return;
  }
  const bool by_time = now - last_print_ >= opt_.interval_s && now - start_ >= opt_.interval_s;
  const bool by_steps = opt_.interval_steps > 0 && step_ - last_step_ >= opt_.interval_steps;
  if (by_time || by_steps) print(false);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  // A plain log already holding this exact state needs no repeat.
  if (!tty_ && last_print_ > -1e300 && last_step_ == step_) return;
  print(true);
}

}  // namespace vt
