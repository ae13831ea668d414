#include "core/config_checks.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <sstream>

namespace vt {

namespace {
std::string num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}
}  // namespace

void bad_value(const Config& c, const std::string& key, const std::string& what) {
  throw ConfigError(key + " (" + c.source(key) + "): " + what);
}

int64_t int_in(const Config& c, const std::string& key, int64_t lo, int64_t hi) {
  const int64_t v = c.get<int64_t>(key);
  if (v < lo || v > hi)
    bad_value(c, key,
              (hi == std::numeric_limits<int64_t>::max()
                   ? "must be >= " + std::to_string(lo)
                   : "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]") +
                  ", got " + std::to_string(v));
  return v;
}

double real_in(const Config& c, const std::string& key, double lo, double hi, bool open_lo, bool open_hi) {
  const double v = c.get<double>(key);
  const bool ok = std::isfinite(v) && (open_lo ? v > lo : v >= lo) && (open_hi ? v < hi : v <= hi);
  if (!ok) {
    const std::string hi_s = std::isinf(hi) ? "inf)" : num(hi) + (open_hi ? ")" : "]");
    bad_value(c, key, "must be a finite number in " + std::string(open_lo ? "(" : "[") + num(lo) + ", " + hi_s +
                          ", got " + num(v));
  }
  return v;
}

void reject_unread(const Config& c, const std::string& key, bool read, const std::string& reader,
                   double default_value) {
  if (read || !c.has(key) || c.get<double>(key) == default_value) return;
  bad_value(c, key, "is read only by " + reader + "; remove it (got " + num(c.get<double>(key)) + ")");
}

std::string run_name(const Config& c, const std::string& key) {
  const std::string name = c.get<std::string>(key);
  const bool chars_ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_' || ch == '.';
  });
  if (!chars_ok || name == "." || name == "..")
    bad_value(c, key, "must be a plain name (letters, digits, '-', '_', '.'; not '.' or '..'), got '" + name + "'");
  return name;
}

bool given(const Config& cfg, const std::string& key) { return cfg.source(key) != "default"; }

}  // namespace vt
