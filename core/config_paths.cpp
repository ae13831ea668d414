#include "core/config_paths.h"

#include <cstdlib>
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

std::vector<std::string> data_root_candidates(const Config& c, const std::string& key, const std::string& config_path) {
  const std::string value = c.get<std::string>(key);
  std::vector<std::string> out{resolve_path(c, key, config_path)};
  const fs::path v(value);
  if (value.empty() || v.is_absolute()) return out;
  auto add = [&](const fs::path& p) {
    const std::string s = p.lexically_normal().string();
    for (const std::string& o : out)
      if (o == s) return;
    out.push_back(s);
  };
  const char* env = std::getenv("VT_DATA_DIR");
  if (env && *env) add(fs::path(env) / v);
  if (!config_path.empty() && c.source(key) != "command line") {
    const fs::path base = fs::absolute(config_path).parent_path().parent_path();
    add(base / "data" / v);
    add(base / ".." / "shared" / "data" / v);
  }
  return out;
}

std::string resolve_data_root(const Config& c, const std::string& key, const std::string& config_path) {
  const std::vector<std::string> cands = data_root_candidates(c, key, config_path);
  for (const std::string& p : cands) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) return p;
  }
  return cands.front();
}

std::string missing_data_root_message(const Config& c, const std::string& key, const std::string& config_path) {
  const std::string value = c.get<std::string>(key);
  const std::vector<std::string> cands = data_root_candidates(c, key, config_path);
  std::string msg = key + " '" + value + "' (" + c.source(key) + ") does not exist or is not a directory";
  if (cands.size() > 1 || cands.front() != value) {
    msg += "; looked in:";
    for (size_t i = 0; i < cands.size(); ++i) msg += (i ? ", " : " ") + cands[i];
  }
  const char* env = std::getenv("VT_DATA_DIR");
  const std::string name = fs::path(value).is_absolute() ? "" : fs::path(value).begin()->string();
  std::vector<std::string> ways;  // what the user can do, the most specific first
  if (name == "cifar10") {
    // The script that downloads it, where this config sits in a source tree.
    std::string script = "scripts/get_data.sh";
    std::string dest = "data/cifar10";
    if (!config_path.empty()) {
      const fs::path base = fs::absolute(config_path).parent_path().parent_path();
      if (fs::is_regular_file(base / "scripts" / "get_data.sh")) {
        script = (base / "scripts" / "get_data.sh").lexically_normal().string();
        dest = (env && *env ? fs::path(env) / "cifar10" : base / "data" / "cifar10").lexically_normal().string();
      }
    }
    ways.push_back("To get CIFAR-10, run `" + script + " cifar10` (downloads the official release into " + dest +
                   ", where this config finds it)");
  }
  if (!name.empty())
    ways.push_back(std::string(ways.empty() ? "Set" : "set") + " VT_DATA_DIR to a folder that holds " + value + "/ (" +
                   (env && *env ? std::string("VT_DATA_DIR is '") + env + "'" : std::string("VT_DATA_DIR is unset")) +
                   ")");
  ways.push_back(std::string(ways.empty() ? "Give " : "give ") + key + "=DIR");
  msg += ".";
  for (size_t i = 0; i < ways.size(); ++i) msg += (i ? "; or " : " ") + ways[i];
  return msg + ".";
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
  for (const std::string& key : keys.data_roots) set(key, resolve_data_root(in, key, config_path));
  return out;
}

PathKeys trainer_path_keys(const Config& cfg) {
  PathKeys k;
  k.data_roots.push_back("data.root");
  const std::string resume = cfg.get<std::string>("resume");
  if (resume != "auto" && resume != "never" && resume != "none") k.file_relative.push_back("resume");
  k.cwd_relative.push_back("out_dir");
  return k;
}

Config with_absolute_trainer_paths(const Config& cfg, const std::string& config_path) {
  return with_absolute_paths(cfg, config_path, trainer_path_keys(cfg));
}

}  // namespace vt
