#include "core/metrics.h"

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace vt {

std::string metrics_line(int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
                         const std::vector<std::pair<std::string, std::string>>& strings) {
  // ordered_json keeps "step" first and the caller's order after it.
  nlohmann::ordered_json j;
  j["step"] = step;
  for (const auto& [k, v] : scalars) j[k] = v;  // NaN/Inf dump as null
  for (const auto& [k, v] : strings) j[k] = v;
  return j.dump();
}

MetricsWriter::MetricsWriter(const std::string& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "a");
  if (!f_) throw std::runtime_error("MetricsWriter: cannot open '" + path + "': " + std::strerror(errno));
}

MetricsWriter::~MetricsWriter() {
  if (f_) std::fclose(f_);
}

void MetricsWriter::write(int64_t step, const std::vector<std::pair<std::string, double>>& scalars,
                          const std::vector<std::pair<std::string, std::string>>& strings) {
  std::string line = metrics_line(step, scalars, strings) + "\n";
  std::lock_guard<std::mutex> lk(mu_);
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    throw std::runtime_error("MetricsWriter: write to '" + path_ + "' failed: " + std::strerror(errno));
}

}  // namespace vt
