#include "diffusion/checkpoint.h"

#include <unistd.h>

#include <filesystem>
#include <stdexcept>
#include <vector>

#include "core/atomic_file.h"
#include "core/safetensors.h"

namespace vt {
namespace fs = std::filesystem;

std::string save_dit_checkpoint(const std::string& run_dir, int64_t step, const DitCheckpoint& ck) {
  const fs::path final_dir = fs::path(run_dir) / ("step_" + std::to_string(step));
  const fs::path tmp = fs::path(run_dir) / (".step_" + std::to_string(step) + ".tmp." + std::to_string(getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  auto save = [&](const char* file, const std::map<std::string, Tensor>& m) {
    save_safetensors((tmp / file).string(), {m.begin(), m.end()}, {{"format", "pt"}});
  };
  save("model.safetensors", ck.model);
  save("ema.safetensors", ck.ema);
  save("optimizer.safetensors", ck.optimizer);
  write_file_atomic((tmp / "state.json").string(), ck.state.dump(2) + "\n");
  std::error_code ec;
  fs::remove_all(final_dir, ec);
  fs::rename(tmp, final_dir, ec);
  if (ec) throw std::runtime_error("checkpoint: cannot rename " + tmp.string() + " to " + final_dir.string() + ": " +
                                   ec.message());
  return final_dir.string();
}

DitCheckpoint load_dit_checkpoint(const std::string& dir, bool with_optimizer) {
  DitCheckpoint ck;
  auto need = [&](const char* file) {
    const fs::path p = fs::path(dir) / file;
    if (!fs::is_regular_file(p)) throw std::runtime_error("checkpoint '" + dir + "': missing " + file);
    return p.string();
  };
  try {
    ck.state = nlohmann::json::parse(read_file(need("state.json")));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("checkpoint '" + dir + "': state.json is not valid JSON: " + e.what());
  }
  ck.model = load_safetensors(need("model.safetensors"));
  ck.ema = load_safetensors(need("ema.safetensors"));
  if (with_optimizer) ck.optimizer = load_safetensors(need("optimizer.safetensors"));
  return ck;
}

std::optional<std::string> latest_dit_checkpoint(const std::string& run_dir) {
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return std::nullopt;
  int64_t best = -1;
  std::string path;
  for (const auto& e : fs::directory_iterator(run_dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_directory() || name.rfind("step_", 0) != 0) continue;
    try {
      size_t pos = 0;
      const int64_t s = std::stoll(name.substr(5), &pos);
      if (pos != name.size() - 5) continue;
      if (!fs::is_regular_file(e.path() / "state.json")) continue;
      if (s > best) best = s, path = e.path().string();
    } catch (const std::exception&) {
    }
  }
  if (best < 0) return std::nullopt;
  return path;
}

}  // namespace vt
