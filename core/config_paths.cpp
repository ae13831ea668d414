#include "core/config_paths.h"

#include <filesystem>
#include <system_error>

namespace vt {

namespace fs = std::filesystem;

std::vector<std::string> config_search_dirs(const std::string& compiled_in_dir) {
  std::vector<std::string> dirs;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec && !exe.empty())
    dirs.push_back((exe.parent_path().parent_path() / "share" / "vtrain" / "configs").lexically_normal().string());
  if (!compiled_in_dir.empty() && (dirs.empty() || dirs.front() != compiled_in_dir)) dirs.push_back(compiled_in_dir);
  return dirs;
}

std::string find_config(const std::string& arg, const std::vector<std::string>& configs_dirs) {
  std::vector<std::string> cands{arg};
  // An absolute path names one file; it is not looked up in the directories.
  if (!fs::path(arg).is_absolute())
    for (const std::string& dir : configs_dirs)
      for (const std::string& name : {arg, arg + ".yaml"}) cands.push_back((fs::path(dir) / name).string());
  for (const std::string& cand : cands) {
    if (fs::is_directory(cand))
      throw ConfigError("config '" + arg + "': '" + cand + "' is a directory, expected a YAML file");
    if (fs::is_regular_file(cand)) return cand;
  }
  std::string msg = "config '" + arg + "' not found (tried:";
  for (const auto& t : cands) msg += " " + t;
  throw ConfigError(msg + ")");
}

std::string resolve_path(const Config& c, const std::string& key, const std::string& config_path) {
  const fs::path p(c.get<std::string>(key));
  if (p.is_absolute() || config_path.empty() || c.source(key) == "command line") return p.lexically_normal().string();
  return (fs::absolute(config_path).parent_path().parent_path() / p).lexically_normal().string();
}

Config with_absolute_paths(const Config& in, const std::string& config_path, const PathKeys& keys) {
  Config out = in;
  auto set = [&](const std::string& key, const std::string& path) {
    if (path.empty()) return;
    const std::string abs = fs::absolute(path).lexically_normal().string();
    if (abs != in.get<std::string>(key)) out.set_string(key, abs, in.source(key));
  };
  for (const std::string& key : keys.file_relative) set(key, resolve_path(in, key, config_path));
  for (const std::string& key : keys.cwd_relative) set(key, in.get<std::string>(key));
  return out;
}

PathKeys trainer_path_keys(const Config& cfg) {
  PathKeys k;
  k.file_relative.push_back("data.root");
  const std::string resume = cfg.get<std::string>("resume");
  if (resume != "auto" && resume != "never" && resume != "none") k.file_relative.push_back("resume");
  k.cwd_relative.push_back("out_dir");
  return k;
}

Config with_absolute_trainer_paths(const Config& cfg, const std::string& config_path) {
  return with_absolute_paths(cfg, config_path, trainer_path_keys(cfg));
}

}  // namespace vt
