#include "core/metrics.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "core/atomic_file.h"

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

int64_t drop_metrics_after(const std::string& path, int64_t step) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("metrics: cannot read '" + path + "': " + std::strerror(errno));
  std::string kept, line;
  int64_t dropped = 0;
  while (std::getline(in, line)) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (j.is_object() && j.contains("step") && j["step"].is_number_integer() && j["step"].get<int64_t>() > step) {
      ++dropped;
      continue;
    }
    kept += line + "\n";
  }
  if (in.bad()) throw std::runtime_error("metrics: cannot read '" + path + "': " + std::strerror(errno));
  if (dropped > 0) write_file_atomic(path, kept);
  return dropped;
}

std::set<std::string> metrics_splits_at(const std::string& path, int64_t step) {
  std::set<std::string> splits;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return splits;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("metrics: cannot read '" + path + "': " + std::strerror(errno));
  for (std::string line; std::getline(in, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer() || j["step"].get<int64_t>() != step)
      continue;
    splits.insert(j.contains("split") && j["split"].is_string() ? j["split"].get<std::string>() : std::string());
  }
  if (in.bad()) throw std::runtime_error("metrics: cannot read '" + path + "': " + std::strerror(errno));
  return splits;
}

}  // namespace vt
