// Where a program finds its CONFIG and how path-valued keys resolve; shared
// by vtrain, dittrain and veval.
//
// Lookup (find_config): CONFIG as given (a file), else NAME and NAME.yaml in
// each configs directory in order. config_search_dirs() gives that order for
// an installed or a build-tree program: <exe_dir>/../share/vtrain/configs
// (`cmake --install` puts the configs there), then the source tree's
// configs/ compiled into the program (for build-tree use).
//
// Relative paths: a value written in a config FILE resolves against the
// parent of that file's directory (configs/x.yaml says
// `../shared/data/cifar10` relative to the repository or install prefix's
// share/vtrain/), a value given on the command line (or in a config parsed
// from text, config_path "") against the current directory.
#pragma once
#include <string>
#include <vector>

#include "core/config.h"

namespace vt {

// <dir of the running executable>/../share/vtrain/configs, then
// `compiled_in_dir`; duplicates and an unknown executable path are dropped.
std::vector<std::string> config_search_dirs(const std::string& compiled_in_dir);

// The CONFIG file for `arg` (see above). Throws ConfigError listing every
// place tried, or naming a candidate that is a directory.
std::string find_config(const std::string& arg, const std::vector<std::string>& configs_dirs);

// The path of string key `key` under the rules above (lexically normal;
// relative when the value is relative and came from the command line).
std::string resolve_path(const Config& cfg, const std::string& key, const std::string& config_path);

struct PathKeys {
  std::vector<std::string> file_relative;  // resolve_path rules (data.root, a resume directory)
  std::vector<std::string> cwd_relative;   // always relative to the current directory (out_dir)
};

// The config with each listed key replaced by the absolute path it resolves
// to, so that a resolved config saved into a run directory means the same
// from anywhere. Empty values are left for the caller's checks; idempotent.
Config with_absolute_paths(const Config& cfg, const std::string& config_path, const PathKeys& keys);

// The trainers' path keys: data.root and resume (when it names a
// directory, not auto | never | none) file-relative, out_dir CWD-relative.
PathKeys trainer_path_keys(const Config& cfg);
// with_absolute_paths(cfg, config_path, trainer_path_keys(cfg)).
Config with_absolute_trainer_paths(const Config& cfg, const std::string& config_path);

}  // namespace vt
