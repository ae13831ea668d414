#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "core/config.h"
#include "core/config_yaml.h"

namespace vt {

const char* config_type_name(ConfigType t) {
  switch (t) {
    case ConfigType::Int: return "int";
    case ConfigType::Float: return "float";
    case ConfigType::Bool: return "bool";
    case ConfigType::String: return "string";
    case ConfigType::IntList: return "list<int>";
    case ConfigType::FloatList: return "list<float>";
    case ConfigType::StringList: return "list<string>";
    case ConfigType::Map: return "map";
  }
  return "?";
}


namespace config_detail {

ScalarKind plain_kind(const std::string& s) {
  static const std::regex re_null("~|null|Null|NULL|");
  static const std::regex re_bool("true|True|TRUE|false|False|FALSE");
  static const std::regex re_int("[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+");
  static const std::regex re_float(
      "[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN)");
  // Every null, bool, int or float literal is empty or starts with one of
  // these; most strings (names, paths) do not and skip the regexes, which
  // made up much of a parse.
  if (!s.empty() && std::strchr("~nNtTfF+-.0123456789", s[0]) == nullptr) return ScalarKind::Str;
  if (std::regex_match(s, re_null)) return ScalarKind::Null;
  if (std::regex_match(s, re_bool)) return ScalarKind::Bool;
  if (std::regex_match(s, re_int)) return ScalarKind::Int;
  if (std::regex_match(s, re_float)) return ScalarKind::Float;
  return ScalarKind::Str;
}

ScalarKind scalar_kind(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return ScalarKind::Null;
  if (n.Tag() == "!") return ScalarKind::Str;  // quoted in the source
  return plain_kind(n.Scalar());
}

std::string describe(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsSequence()) {
    YAML::Emitter e;
    e << YAML::Flow << n;
    return "list " + std::string(e.c_str());
  }
  if (n.IsMap()) return "map";
  switch (scalar_kind(n)) {
    case ScalarKind::Bool: return "bool '" + n.Scalar() + "'";
    case ScalarKind::Int: return "int '" + n.Scalar() + "'";
    case ScalarKind::Float: return "float '" + n.Scalar() + "'";
    default: return "string '" + n.Scalar() + "'";
  }
}

[[noreturn]] static void mismatch(const YAML::Node& n, const char* expected, const std::string& where) {
  throw ConfigError(where + ": expected " + expected + ", found " + describe(n));
}

int64_t to_int(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar() || scalar_kind(n) != ScalarKind::Int) mismatch(n, "int", where);
  const std::string& s = n.Scalar();
  errno = 0;
  long long v;
  if (s.rfind("0o", 0) == 0) v = std::strtoll(s.c_str() + 2, nullptr, 8);
  else if (s.rfind("0x", 0) == 0) v = std::strtoll(s.c_str() + 2, nullptr, 16);
  else v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE) throw ConfigError(where + ": integer '" + s + "' out of range");
  return v;
}

double to_float(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar()) mismatch(n, "float", where);
  ScalarKind k = scalar_kind(n);
  if (k == ScalarKind::Int) return static_cast<double>(to_int(n, where));
  if (k != ScalarKind::Float) mismatch(n, "float", where);
  std::string s = n.Scalar();
  size_t dot = s.find('.');
  if (dot != std::string::npos && s.size() > dot + 1 && (s[dot + 1] == 'i' || s[dot + 1] == 'I'))
    return s[0] == '-' ? -INFINITY : INFINITY;
  if (dot != std::string::npos && s.size() > dot + 1 && (s[dot + 1] == 'n' || s[dot + 1] == 'N')) return NAN;
  return std::strtod(s.c_str(), nullptr);
}

bool to_bool(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar() || scalar_kind(n) != ScalarKind::Bool) mismatch(n, "bool", where);
  return n.Scalar()[0] == 't' || n.Scalar()[0] == 'T';
}

std::string to_str(const YAML::Node& n, const std::string& where) {
  if (!n.IsScalar() || scalar_kind(n) == ScalarKind::Null) mismatch(n, "string", where);
  return n.Scalar();
}

std::string float_repr(double v) {
  if (std::isnan(v)) return ".nan";
  if (std::isinf(v)) return v < 0 ? "-.inf" : ".inf";
  char buf[40];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  // "1e-05" reads as a float in YAML 1.2 but not in YAML 1.1 readers
  // (PyYAML); a mantissa with a '.' is a float in both.
  size_t e = s.find('e');
  if (e != std::string::npos && s.substr(0, e).find('.') == std::string::npos) s.insert(e, ".0");
  return s;
}

static YAML::Node str_node(const std::string& s) {
  YAML::Node out(s);
  out.SetTag("!");
  return out;
}

YAML::Node canonical(const YAML::Node& n, ConfigType type, const std::string& where) {
  auto list = [&](const char* name, auto one) {
    if (!n.IsSequence()) mismatch(n, name, where);
    YAML::Node out(YAML::NodeType::Sequence);
    for (size_t i = 0; i < n.size(); ++i) out.push_back(one(n[i], where + "[" + std::to_string(i) + "]"));
    return out;
  };
  switch (type) {
    case ConfigType::Int: return YAML::Node(std::to_string(to_int(n, where)));
    case ConfigType::Float: return YAML::Node(float_repr(to_float(n, where)));
    case ConfigType::Bool: return YAML::Node(to_bool(n, where) ? "true" : "false");
    case ConfigType::String: return str_node(to_str(n, where));
    case ConfigType::IntList:
      return list("list<int>", [](const YAML::Node& x, const std::string& w) {
        return YAML::Node(std::to_string(to_int(x, w)));
      });
    case ConfigType::FloatList:
      return list("list<float>", [](const YAML::Node& x, const std::string& w) {
        return YAML::Node(float_repr(to_float(x, w)));
      });
    case ConfigType::StringList:
      return list("list<string>", [](const YAML::Node& x, const std::string& w) { return str_node(to_str(x, w)); });
    case ConfigType::Map:
      if (!n.IsMap()) mismatch(n, "map", where);
      return YAML::Clone(n);
  }
  return n;
}

}  // namespace config_detail

const ConfigKey* ConfigSchema::find(const std::string& path) const {
  for (const auto& k : keys_)
    if (k.path == path) return &k;
  return nullptr;
}

static void add_key(std::vector<ConfigKey>& keys, ConfigKey k) {
  if (k.path.empty() || k.path.front() == '.' || k.path.back() == '.' || k.path.find("..") != std::string::npos)
    throw std::logic_error("ConfigSchema: bad key path '" + k.path + "'");
  for (const auto& o : keys) {
    if (o.path == k.path) throw std::logic_error("ConfigSchema: duplicate key '" + k.path + "'");
    if (k.path.rfind(o.path + ".", 0) == 0 || o.path.rfind(k.path + ".", 0) == 0)
      throw std::logic_error("ConfigSchema: key '" + k.path + "' nested with key '" + o.path + "'");
  }
  if (!k.required) {
    YAML::Node d;
    try {
      d = YAML::Load(k.default_yaml);
    } catch (const YAML::Exception& e) {
      throw std::logic_error("ConfigSchema: default of '" + k.path + "' is not YAML: " + e.what());
    }
    if (!d.IsNull()) {
      try {
        config_detail::canonical(d, k.type, "default of '" + k.path + "'");
      } catch (const ConfigError& e) {
        throw std::logic_error(std::string("ConfigSchema: ") + e.what());
      }
    }
  }
  keys.push_back(std::move(k));
}

ConfigSchema& ConfigSchema::required(const std::string& path, ConfigType type, const std::string& help) {
  add_key(keys_, ConfigKey{path, type, true, "", help});
  return *this;
}

ConfigSchema& ConfigSchema::renamed(const std::string& old_path, const std::string& new_path) {
  if (find(old_path)) throw std::logic_error("ConfigSchema: renamed key '" + old_path + "' is a key of the schema");
  if (!find(new_path))
    throw std::logic_error("ConfigSchema: '" + old_path + "' renamed to '" + new_path + "', which is not a key");
  renamed_[old_path] = new_path;
  return *this;
}

const std::string* ConfigSchema::renamed_to(const std::string& old_path) const {
  auto it = renamed_.find(old_path);
  return it == renamed_.end() ? nullptr : &it->second;
}

ConfigSchema& ConfigSchema::optional(const std::string& path, ConfigType type, const std::string& default_yaml,
                                     const std::string& help) {
  add_key(keys_, ConfigKey{path, type, false, default_yaml, help});
  return *this;
}

std::string ConfigSchema::help_text() const {
  size_t w = 0;
  for (const auto& k : keys_) w = std::max(w, k.path.size());
  std::ostringstream o;
  for (const auto& k : keys_) {
    std::string spec = std::string(config_type_name(k.type)) + (k.required ? " (required)" : " = " + k.default_yaml);
    o << "  " << k.path << std::string(w - k.path.size() + 2, ' ') << spec;
    if (!k.help.empty()) o << "   " << k.help;
    o << "\n";
  }
  return o.str();
}

}  // namespace vt
