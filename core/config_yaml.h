// Internal to vt_config (not installed for callers): YAML scalar typing and
// typed conversion shared by the schema, the validator and the getters.
#pragma once
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>

#include "core/config.h"

namespace vt::config_detail {

// The YAML 1.2 core-schema reading of a plain scalar. Quoted scalars are
// always Str.
enum class ScalarKind { Null, Bool, Int, Float, Str };
ScalarKind scalar_kind(const YAML::Node& n);
ScalarKind plain_kind(const std::string& text);

// "int 3", "string 'abc'", "list", "map", "null" (for messages).
std::string describe(const YAML::Node& n);

// Typed reads; on mismatch throw ConfigError "<where>: expected <type>, found
// <describe(n)>".
int64_t to_int(const YAML::Node& n, const std::string& where);
double to_float(const YAML::Node& n, const std::string& where);
bool to_bool(const YAML::Node& n, const std::string& where);
std::string to_str(const YAML::Node& n, const std::string& where);

// Checks that n holds `type` and returns it in canonical form (see
// Config::to_yaml); throws like the readers above.
YAML::Node canonical(const YAML::Node& n, ConfigType type, const std::string& where);

// Shortest decimal text that reads back as the same double, always with a
// '.', exponent, inf or nan so that it stays a float in YAML.
std::string float_repr(double v);

}  // namespace vt::config_detail
