// Program configuration: YAML files with inheritance, command-line overrides,
// and a schema per program.
//
//  * A file may name `_base_: path` or `_base_: [path, ...]` (relative to the
//    including file). Bases are deep-merged in order, then the file itself on
//    top: maps merge key by key, everything else (scalars, lists) replaces.
//  * Overrides `key.path=value` (command line) are applied last; the value is
//    parsed as YAML, so `lr=1e-3` is a float, `flag=true` a bool,
//    `name=foo` a string, `list=[1,2]` a list and `key=~` (or `key=null`)
//    null. An empty value (`key=`) is an error naming the key: a value lost
//    by the shell (`lr=$LR` with LR unset) must not become the default.
//  * A key written twice in one map (in the file or in any of its _base_
//    files) is an error naming the file and both lines: YAML parsers keep
//    one of the two silently, and a repeated section would replace the first.
//  * The schema lists every key path with its type and either "required" or
//    a default. Types follow the YAML 1.2 core schema: Int takes plain
//    integer literals (`12`, `-3`, `0x1f`), Float takes integer or float
//    literals (`1e-3`, `.5`, `.inf`), Bool takes true/false (any case), String
//    takes any non-null scalar; a quoted scalar is always a string. A key
//    whose default is `~` (null) may be left unset (has() is false).
//    A Map key holds free-form content (any map) that is not checked further.
//  * Renamed keys (old path -> new path) are rejected with a message naming
//    the new key, e.g. "key 'log.every' was renamed to 'log.every_steps'".
//
// Every problem (unknown key, wrong type, missing required key, bad YAML,
// missing or cyclic _base_) is a ConfigError whose message names the key, the
// source (`file.yaml:LINE` or `command line`), the expected type and the
// value found; unknown keys come with the nearest valid key path
// (Levenshtein distance over full dotted paths). All problems of a config
// are reported together, one per line.
//
// The public header is free of yaml-cpp types (pimpl).
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace vt {

class ConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class ConfigType { Int, Float, Bool, String, IntList, FloatList, StringList, Map };
const char* config_type_name(ConfigType t);  // "int", "float", ..., "list<int>", "map"

struct ConfigKey {
  std::string path;          // dotted, e.g. "train.lr"
  ConfigType type;
  bool required = false;
  std::string default_yaml;  // YAML text of the default when not required
  std::string help;
};

class ConfigSchema {
 public:
  // Both throw std::logic_error for a duplicate path, a path nested under
  // another non-Map key, or a default that does not parse as `type`.
  ConfigSchema& required(const std::string& path, ConfigType type, const std::string& help);
  ConfigSchema& optional(const std::string& path, ConfigType type, const std::string& default_yaml,
                         const std::string& help);
  // An old key name: a config that still uses it fails naming `new_path`.
  // Throws std::logic_error when old_path is a key of the schema or
  // new_path is not.
  ConfigSchema& renamed(const std::string& old_path, const std::string& new_path);

  const std::vector<ConfigKey>& keys() const { return keys_; }
  const ConfigKey* find(const std::string& path) const;
  // The new name of a renamed key, or nullptr.
  const std::string* renamed_to(const std::string& old_path) const;
  // One line per key: "  train.lr  float = 5e-4   peak learning rate".
  std::string help_text() const;

 private:
  std::vector<ConfigKey> keys_;
  std::map<std::string, std::string> renamed_;  // old path -> new path
};

class Config {
 public:
  Config();
  ~Config();
  Config(const Config&);
  Config& operator=(const Config&);

  // Loads `path` (with its _base_ chain), applies `overrides` ("a.b=value"),
  // validates against `schema` and fills defaults.
  static Config load(const std::string& path, const ConfigSchema& schema,
                     const std::vector<std::string>& overrides = {});
  // Same from YAML text; `source_name` is used in messages and _base_ paths
  // are taken relative to `base_dir`.
  static Config parse(const std::string& yaml_text, const ConfigSchema& schema,
                      const std::vector<std::string>& overrides = {}, const std::string& source_name = "<string>",
                      const std::string& base_dir = ".");

  // Typed getters. T is one of int, int64_t, double, float, bool,
  // std::string, std::vector<int>, std::vector<int64_t>, std::vector<double>,
  // std::vector<float>, std::vector<std::string>, and
  // std::map<std::string, std::string> (a map of scalars). Keys inside Map
  // keys are reachable too ("model.extra.depth"). Throws ConfigError naming
  // the key when it is absent, null or not convertible.
  template <typename T>
  T get(const std::string& key) const;
  template <typename T>
  T get_or(const std::string& key, const T& fallback) const {
    return has(key) ? get<T>(key) : fallback;
  }
  bool has(const std::string& key) const;  // present and not null
  // Where the value came from: "file.yaml:LINE", "command line" or "default".
  std::string source(const std::string& key) const;
  // Child keys of a map node (sorted); empty when not a map.
  std::vector<std::string> children(const std::string& key) const;

  // Replaces the value of a string key of the schema (e.g. a path made
  // absolute before the config is saved) and records `source` as where it
  // came from. Throws ConfigError when `key` is not a string key of the
  // schema.
  void set_string(const std::string& key, const std::string& value, const std::string& source);
  // The same for a key of any scalar or list type: `yaml_value` is parsed as
  // YAML and checked against the key's type (e.g. the architecture a preset
  // resolved to, recorded in the saved config). Throws ConfigError when
  // `key` is not in the schema or the value does not have its type.
  void set(const std::string& key, const std::string& yaml_value, const std::string& source);

  // The resolved config as YAML: maps with sorted keys, schema values in
  // canonical form (floats in shortest round-trip notation), _base_ removed.
  // Loading it again with the same schema gives the same config.
  std::string to_yaml() const;
  void save(const std::string& path) const;  // atomic
  // FNV-1a 64 of to_yaml(): identifies the configuration in checkpoints.
  uint64_t digest() const;
  std::string digest_hex() const;  // 16 lowercase hex digits
  // The same over the config without the listed keys (a listed map key
  // drops its whole subtree), e.g. run-control keys (core/run_control.h).
  uint64_t digest(const std::vector<std::string>& excluded) const;
  std::string digest_hex(const std::vector<std::string>& excluded) const;

 struct Impl;  // opaque (yaml-cpp tree, per-key sources, schema)

 private:
  friend struct ConfigBuilder;
  std::unique_ptr<Impl> impl_;
};

// Levenshtein edit distance between two sequences: a replaced, added or
// dropped element costs 1. Over the characters of two strings, or over the
// segments of two dotted keys ("did you mean").
template <typename Seq>
size_t sequence_edit_distance(const Seq& a, const Seq& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
inline size_t edit_distance(const std::string& a, const std::string& b) { return sequence_edit_distance(a, b); }

// A subcommand's `key=value` arguments (`vtrain pack`, `dittrain sample`,
// `dittrain extract`): those whose key the command takes (`is_command_key`)
// become `options`, every other one is a config override, in order. Throws
// ConfigError for an argument without '=' or with an empty key, and for a
// command key given twice ("<command>: <key> given twice").
struct CommandArgs {
  std::map<std::string, std::string> options;
  std::vector<std::string> overrides;
};
CommandArgs split_command_args(const std::vector<std::string>& args,
                               const std::function<bool(const std::string&)>& is_command_key,
                               const std::string& command);

}  // namespace vt
