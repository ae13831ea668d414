#include "vision/checkpoint.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/safetensors.h"

namespace vt {

namespace fs = std::filesystem;

namespace {

std::vector<std::pair<std::string, Tensor>> as_list(const std::map<std::string, Tensor>& m) {
  return {m.begin(), m.end()};
}

// fsync of a directory makes the renames inside it durable.
void sync_dir(const std::string& dir) {
  std::FILE* f = std::fopen(dir.c_str(), "r");
  if (!f) return;
  fsync(fileno(f));
  std::fclose(f);
}

bool parse_step_dir(const std::string& name, int64_t* step) {
  if (name.rfind("step_", 0) != 0 || name.size() == 5) return false;
  for (size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  *step = std::stoll(name.substr(5));
  return true;
}

}  // namespace

std::string save_checkpoint(const std::string& run_dir, int64_t step, const CheckpointData& data) {
  const std::string final_dir = run_dir + "/step_" + std::to_string(step);
  const std::string tmp = run_dir + "/.step_" + std::to_string(step) + ".tmp." + std::to_string(getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  fs::create_directories(tmp);
  try {
    save_safetensors(tmp + "/model.safetensors", as_list(data.model), {{"format", "pt"}});
    if (!data.ema.empty()) save_safetensors(tmp + "/ema.safetensors", as_list(data.ema), {{"format", "pt"}});
    save_safetensors(tmp + "/optimizer.safetensors", as_list(data.optimizer));
    write_file_atomic(tmp + "/state.json", data.state.dump(2) + "\n");
    sync_dir(tmp);
    // A directory cannot be renamed over a non-empty one: move the old one
    // aside first, so a crash in between still leaves one complete copy.
    if (fs::exists(final_dir)) {
      const std::string old = tmp + ".old";
      fs::rename(final_dir, old);
      fs::rename(tmp, final_dir);
      fs::remove_all(old);
    } else {
      fs::rename(tmp, final_dir);
    }
    sync_dir(run_dir);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  return final_dir;
}

CheckpointData load_checkpoint(const std::string& dir) {
  if (!fs::is_directory(dir)) throw std::runtime_error("checkpoint '" + dir + "': not a directory");
  CheckpointData d;
  auto part = [&](const std::string& file) { return dir + "/" + file; };
  try {
    d.state = nlohmann::json::parse(read_file(part("state.json")));
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + dir + "': cannot read state.json: " + e.what());
  }
  try {
    d.model = load_safetensors(part("model.safetensors"));
    if (fs::exists(part("ema.safetensors"))) d.ema = load_safetensors(part("ema.safetensors"));
    d.optimizer = load_safetensors(part("optimizer.safetensors"));
  } catch (const std::exception& e) {
    throw std::runtime_error("checkpoint '" + dir + "': " + e.what());
  }
  return d;
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& run_dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    int64_t step;
    if (e.is_directory() && parse_step_dir(e.path().filename().string(), &step))
      out.emplace_back(step, e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<std::string> latest_checkpoint(const std::string& run_dir) {
  auto all = list_checkpoints(run_dir);
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

void prune_checkpoints(const std::string& run_dir, int keep_last, int64_t keep_step) {
  auto all = list_checkpoints(run_dir);
  const int64_t n = static_cast<int64_t>(all.size());
  for (int64_t i = 0; i < n - keep_last; ++i)
    if (all[static_cast<size_t>(i)].first != keep_step) fs::remove_all(all[static_cast<size_t>(i)].second);
  for (const auto& e : fs::directory_iterator(run_dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind(".step_", 0) == 0) fs::remove_all(e.path());
  }
}

}  // namespace vt
