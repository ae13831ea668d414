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
// parent of that file's directory (configs/x.yaml says `data/x` relative to
// the repository or install prefix's share/vtrain/), a value given on the
// command line (or in a config parsed from text, config_path "") against the
// current directory.
//
// Data roots (data.root) are also looked up by name: a relative value is
// tried as given (the rule above), then as $VT_DATA_DIR/<value>, then, for a
// value from a config file, as data/<value> and ../shared/data/<value> beside
// that file's base (the repository root for configs/x.yaml). The first that
// is a directory wins; when none is, the value resolves as given and
// missing_data_root_message() lists every place tried and how to get the data.
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

// The places a data-root key is looked for, in order (see above); one entry
// (the value) when it is absolute.
std::vector<std::string> data_root_candidates(const Config& cfg, const std::string& key, const std::string& config_path);
// The first candidate that is a directory, else the value resolved as given.
std::string resolve_data_root(const Config& cfg, const std::string& key, const std::string& config_path);
// "data.root 'V' (SOURCE) does not exist or is not a directory; looked in:
// ...", and how to get the data: scripts/get_data.sh for a dataset it knows
// (cifar10), VT_DATA_DIR, or KEY=DIR.
std::string missing_data_root_message(const Config& cfg, const std::string& key, const std::string& config_path);

struct PathKeys {
  std::vector<std::string> file_relative;  // resolve_path rules (a resume directory)
  std::vector<std::string> cwd_relative;   // always relative to the current directory (out_dir)
  std::vector<std::string> data_roots;     // resolve_data_root rules (data.root)
};

// The config with each listed key replaced by the absolute path it resolves
// to, so that a resolved config saved into a run directory means the same
// from anywhere. Empty values are left for the caller's checks; idempotent.
Config with_absolute_paths(const Config& cfg, const std::string& config_path, const PathKeys& keys);

// The trainers' path keys: data.root a data root, resume (when it names a
// directory, not auto | never | none) file-relative, out_dir CWD-relative.
PathKeys trainer_path_keys(const Config& cfg);
// with_absolute_paths(cfg, config_path, trainer_path_keys(cfg)).
Config with_absolute_trainer_paths(const Config& cfg, const std::string& config_path);

}  // namespace vt
