#include "core/checkpoint_dir.h"

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "core/atomic_file.h"
#include "core/safetensors.h"

namespace vt {

namespace fs = std::filesystem;

namespace {

// fsync of a directory makes the renames inside it durable. Best effort: a
// file system that cannot sync directories still gets complete files.
void sync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

bool parse_step_dir(const std::string& name, int64_t* step) {
  if (name.rfind("step_", 0) != 0 || name.size() == 5 || name.size() > 5 + 18) return false;
  for (size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  *step = std::stoll(name.substr(5));
  return true;
}

void save_map(const std::string& path, const std::map<std::string, Tensor>& m) {
  save_safetensors(path, {m.begin(), m.end()}, {{"format", "pt"}});
}

uint64_t map_bytes(const std::map<std::string, Tensor>& m) {
  // Per tensor: its bytes and a header entry (name, dtype, shape, offsets:
  // under 128 bytes beyond the name); 8 + 64 for the header's frame.
  uint64_t b = 72;
  for (const auto& [name, t] : m) b += static_cast<uint64_t>(t.nbytes()) + name.size() + 128;
  return b;
}

std::string mib(uint64_t bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

uint64_t checkpoint_bytes(const CheckpointData& data) {
  return map_bytes(data.model) + (data.ema.empty() ? 0 : map_bytes(data.ema)) + map_bytes(data.optimizer) +
         data.state.dump(2).size() + 1;
}

std::string save_checkpoint(const std::string& run_dir, int64_t step, const CheckpointData& data) {
  if (step < 0) throw std::invalid_argument("save_checkpoint: negative step " + std::to_string(step));
  const std::string final_dir = (fs::path(run_dir) / ("step_" + std::to_string(step))).string();
  const std::string tmp =
      (fs::path(run_dir) / (".step_" + std::to_string(step) + ".tmp." + std::to_string(getpid()))).string();
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    fs::create_directories(tmp);
    save_map(tmp + "/model.safetensors", data.model);
    if (!data.ema.empty()) save_map(tmp + "/ema.safetensors", data.ema);
    save_map(tmp + "/optimizer.safetensors", data.optimizer);
    write_file_atomic(tmp + "/state.json", data.state.dump(2) + "\n");
    sync_dir(tmp);
    // A directory cannot be renamed over a non-empty one: move the old one
    // aside first, so a crash in between still leaves one complete copy
    // (the ".step_*" name makes it a stale temporary).
    if (fs::exists(final_dir)) {
      const std::string old = tmp + ".old";
      fs::remove_all(old, ec);
      fs::rename(final_dir, old);
      fs::rename(tmp, final_dir);
      // What a user put beside the old checkpoint moves into the new one.
      for (const std::string& name : files_not_of_checkpoint(old))
        fs::rename(fs::path(old) / name, fs::path(final_dir) / name, ec);
      fs::remove_all(old, ec);
    } else {
      fs::rename(tmp, final_dir);
    }
    sync_dir(run_dir);
  } catch (const std::exception& e) {
    fs::remove_all(tmp, ec);
    const uint64_t need = checkpoint_bytes(data);
    std::string free_text;
    struct statvfs vfs;
    if (::statvfs(run_dir.c_str(), &vfs) == 0) {
      const uint64_t avail = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
      free_text = ", " + std::to_string(avail) + " bytes (" + mib(avail) + ") free on its file system";
    }
    throw CheckpointWriteError("checkpoint '" + final_dir + "': cannot write: " + e.what() +
                                   "; the checkpoint needs " + std::to_string(need) + " bytes (" + mib(need) + ")" +
                                   free_text + "; the partial checkpoint was removed",
                               need);
  }
  return final_dir;
}

CheckpointData load_checkpoint(const std::string& dir, const CheckpointLoadOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error("checkpoint '" + dir + "': not a directory");
  auto part = [&](const char* file) { return (fs::path(dir) / file).string(); };
  auto need = [&](const char* file) {
    const std::string p = part(file);
    if (!fs::is_regular_file(p, ec)) throw std::runtime_error("checkpoint '" + dir + "': missing " + file);
    return p;
  };
  CheckpointData d;
  try {
    d.state = nlohmann::json::parse(read_file(need("state.json")));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("checkpoint '" + dir + "': state.json is not valid JSON: " + e.what());
  }
  // Part by part, so a damaged file is reported before a missing later one.
  auto load = [&](const char* file) {
    const std::string p = need(file);
    try {
      return load_safetensors(p);
    } catch (const std::exception& e) {
      throw std::runtime_error("checkpoint '" + dir + "': " + e.what());
    }
  };
  d.model = load("model.safetensors");
  if (opt.require_ema || fs::is_regular_file(part("ema.safetensors"), ec)) d.ema = load("ema.safetensors");
  if (opt.optimizer) d.optimizer = load("optimizer.safetensors");
  return d;
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& run_dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return out;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    int64_t step;
    if (e.is_directory() && parse_step_dir(e.path().filename().string(), &step) &&
        fs::is_regular_file(e.path() / "state.json", ec))
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

void remove_stale_checkpoint_temps(const std::string& run_dir) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_directory() && name.rfind(".step_", 0) == 0) fs::remove_all(e.path(), ec);
  }
}

const std::vector<std::string>& checkpoint_file_names() {
  // state.json first: once it is gone the directory is no longer a checkpoint
  // (list_checkpoints), so a removal cut short never leaves a half checkpoint
  // that resume would pick.
  static const std::vector<std::string> names = {"state.json", "model.safetensors", "ema.safetensors",
                                                 "optimizer.safetensors"};
  return names;
}

std::vector<std::string> files_not_of_checkpoint(const std::string& dir) {
  std::vector<std::string> other;
  std::error_code ec;
  const auto& own = checkpoint_file_names();
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (std::find(own.begin(), own.end(), name) == own.end()) other.push_back(name);
  }
  std::sort(other.begin(), other.end());
  return other;
}

std::vector<KeptCheckpointDir> prune_checkpoints(const std::string& run_dir, int keep_last, int64_t keep_step) {
  if (keep_last < 0) throw std::invalid_argument("prune_checkpoints: keep_last " + std::to_string(keep_last) + " < 0");
  auto all = list_checkpoints(run_dir);
  const int64_t n = static_cast<int64_t>(all.size());
  std::vector<KeptCheckpointDir> kept;
  std::error_code ec;
  for (int64_t i = 0; i < n - keep_last; ++i) {
    const auto& [step, dir] = all[static_cast<size_t>(i)];
    if (step == keep_step) continue;
    // Only the files the checkpoint writer made: samples, grids or notes a
    // user put in step_<N>/ are theirs, not the rotation's.
    for (const std::string& f : checkpoint_file_names()) fs::remove(fs::path(dir) / f, ec);
    std::vector<std::string> other = files_not_of_checkpoint(dir);
    if (other.empty()) fs::remove(dir, ec);
    else kept.push_back({dir, std::move(other)});
  }
  remove_stale_checkpoint_temps(run_dir);
  return kept;
}

}  // namespace vt
