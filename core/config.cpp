#include "core/config.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <cstring>
#include <tuple>
#include <sstream>

#include "core/atomic_file.h"
#include "core/config_yaml.h"

namespace vt {

using namespace config_detail;

namespace {

const char* kCommandLine = "command line";
const char* kDefault = "default";

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

std::string join(const std::string& prefix, const std::string& key) { return prefix.empty() ? key : prefix + "." + key; }

// Map lookup without yaml-cpp's operator[], which inserts into non-const
// nodes and aliases on assignment.
YAML::Node child(const YAML::Node& map, const std::string& key) {
  if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  for (auto it = map.begin(); it != map.end(); ++it)
    if (it->first.Scalar() == key) return it->second;
  return YAML::Node(YAML::NodeType::Undefined);
}

YAML::Node lookup(const YAML::Node& root, const std::string& path) {
  YAML::Node n = root;
  for (const auto& p : split_path(path)) {
    n.reset(child(n, p));
    if (!n.IsDefined()) break;
  }
  return n;
}

// lookup() for many paths of one tree: the children of each map on the way
// are read once instead of once per path. Keys are unique in every map
// (reject_repeated_keys, and merges and overrides build maps by key).
class PathIndex {
 public:
  explicit PathIndex(const YAML::Node& root) : root_(root) {}
  YAML::Node lookup(const std::string& path) {
    YAML::Node n = root_;
    std::string prefix;
    for (const auto& p : split_path(path)) {
      const auto& kids = children_of(prefix, n);
      auto it = kids.find(p);
      if (it == kids.end()) return YAML::Node(YAML::NodeType::Undefined);
      n.reset(it->second);
      prefix = join(prefix, p);
    }
    return n;
  }

 private:
  const std::map<std::string, YAML::Node>& children_of(const std::string& prefix, const YAML::Node& n) {
    auto [it, added] = maps_.try_emplace(prefix);
    if (added && n.IsMap())
      for (auto c = n.begin(); c != n.end(); ++c)
        it->second.emplace(c->first.Scalar(), c->second);
    return it->second;
  }
  YAML::Node root_;
  std::map<std::string, std::map<std::string, YAML::Node>> maps_;  // map path -> its children
};

// Returns a copy of `n` with `value` at parts[i..]; non-map nodes on the way
// are replaced by maps (the later source wins).
YAML::Node with_value(const YAML::Node& n, const std::vector<std::string>& parts, size_t i, const YAML::Node& value) {
  if (i == parts.size()) return value;
  YAML::Node out(YAML::NodeType::Map);
  YAML::Node old(YAML::NodeType::Undefined);
  if (n.IsDefined() && n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      if (it->first.Scalar() == parts[i]) old = it->second;
      else out[it->first.Scalar()] = it->second;
    }
  }
  out[parts[i]] = with_value(old, parts, i + 1, value);
  return out;
}

// Deep merge: maps merge recursively with `top` winning; anything else in
// `top` replaces.
YAML::Node merge(const YAML::Node& base, const YAML::Node& top) {
  if (!base.IsDefined() || !base.IsMap() || !top.IsMap()) return YAML::Clone(top);
  YAML::Node out(YAML::NodeType::Map);
  for (auto it = base.begin(); it != base.end(); ++it)
    if (!child(top, it->first.Scalar()).IsDefined()) out[it->first.Scalar()] = YAML::Clone(it->second);
  for (auto it = top.begin(); it != top.end(); ++it)
    out[it->first.Scalar()] = merge(child(base, it->first.Scalar()), it->second);
  return out;
}

// A fresh node equal to a canonical value (a null, a scalar with its tag, a
// list of those; anything else is cloned), sharing no node memory with `n`.
YAML::Node fresh_copy(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return YAML::Node(YAML::NodeType::Null);
  if (n.IsScalar()) {
    YAML::Node out(n.Scalar());
    out.SetTag(n.Tag());
    return out;
  }
  if (n.IsSequence()) {
    YAML::Node out(YAML::NodeType::Sequence);
    for (size_t i = 0; i < n.size(); ++i) out.push_back(fresh_copy(n[i]));
    return out;
  }
  return YAML::Clone(n);
}

// The default of a key, canonical (see ConfigSchema, which checked that it
// is valid) or null: parsed once per (type, text) and copied afterwards,
// since a YAML parser per key made up much of a parse.
YAML::Node default_value(const ConfigKey& k) {
  static std::mutex mu;
  static std::map<std::pair<ConfigType, std::string>, YAML::Node> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find({k.type, k.default_yaml});
  if (it == cache.end()) {
    YAML::Node d = YAML::Load(k.default_yaml);
    const std::string where = "default of '" + k.path + "'";
    it = cache.emplace(std::make_pair(k.type, k.default_yaml), d.IsNull() ? d : canonical(d, k.type, where)).first;
  }
  return fresh_copy(it->second);
}

// The map tree holding each value at its dotted path; the paths are neither
// equal nor nested (schema keys).
struct PathTree {
  YAML::Node value;
  std::map<std::string, PathTree> children;
};

YAML::Node tree_node(const PathTree& t) {
  if (t.children.empty()) return t.value;
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& [name, sub] : t.children) out[name] = tree_node(sub);
  return out;
}

YAML::Node tree_of(const std::vector<std::pair<std::string, YAML::Node>>& values) {
  PathTree root;
  for (const auto& [path, value] : values) {
    PathTree* t = &root;
    for (const auto& part : split_path(path)) t = &t->children[part];
    t->value.reset(value);
  }
  if (root.children.empty()) return YAML::Node(YAML::NodeType::Map);
  return tree_node(root);
}

std::string dir_of(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
}

std::string resolve_rel(const std::string& dir, const std::string& p) {
  if (!p.empty() && p[0] == '/') return p;
  return dir == "." ? p : dir + "/" + p;
}

using Sources = std::map<std::string, std::string>;

void record_sources(const YAML::Node& n, const std::string& prefix, const std::string& file, Sources& src) {
  if (!n.IsMap()) return;
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string path = join(prefix, it->first.Scalar());
    src[path] = file + ":" + std::to_string(it->first.Mark().line + 1);
    record_sources(it->second, path, file, src);
  }
}

// yaml-cpp keeps every entry of a key written twice in one map, and a
// lookup or merge then uses one of them: a second `train:` section would
// replace the first wholesale. Any repeat, at any depth, is an error.
void reject_repeated_keys(const YAML::Node& n, const std::string& prefix, const std::string& name) {
  if (n.IsSequence()) {
    for (size_t i = 0; i < n.size(); ++i) reject_repeated_keys(n[i], prefix + "[" + std::to_string(i) + "]", name);
    return;
  }
  if (!n.IsMap()) return;
  std::map<std::string, int> first_line;
  for (auto it = n.begin(); it != n.end(); ++it) {
    if (!it->first.IsScalar()) continue;
    const std::string key = it->first.Scalar();
    const int line = it->first.Mark().line + 1;
    auto [seen, added] = first_line.emplace(key, line);
    if (!added)
      throw ConfigError(name + ":" + std::to_string(line) + ": key '" + join(prefix, key) + "' is repeated (first at " +
                        name + ":" + std::to_string(seen->second) + "); YAML keeps only one of the two");
    reject_repeated_keys(it->second, join(prefix, key), name);
  }
}

YAML::Node parse_text(const std::string& text, const std::string& name) {
  YAML::Node n;
  try {
    n = YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(name + ":" + std::to_string(e.mark.line + 1) + ":" + std::to_string(e.mark.column + 1) +
                      ": YAML syntax error: " + e.msg);
  }
  if (n.IsNull()) return YAML::Node(YAML::NodeType::Map);
  if (!n.IsMap()) throw ConfigError(name + ": the top level must be a map of keys, found " + describe(n));
  for (auto it = n.begin(); it != n.end(); ++it)
    if (!it->first.IsScalar())
      throw ConfigError(name + ":" + std::to_string(it->first.Mark().line + 1) + ": keys must be scalars");
  reject_repeated_keys(n, "", name);
  return n;
}

// Loads text (named `name`, bases relative to `dir`) with its _base_ chain
// merged in; `stack` holds the files being loaded, to catch cycles.
YAML::Node load_tree(const std::string& text, const std::string& name, const std::string& dir, Sources& src,
                     std::vector<std::string>& stack) {
  YAML::Node n = parse_text(text, name);
  YAML::Node bases = child(n, "_base_");
  YAML::Node merged(YAML::NodeType::Map);
  if (bases.IsDefined() && !bases.IsNull()) {
    std::vector<std::string> paths;
    const std::string where = name + ":" + std::to_string(bases.Mark().line + 1) + ": _base_";
    if (bases.IsScalar()) paths.push_back(to_str(bases, where));
    else if (bases.IsSequence())
      for (size_t i = 0; i < bases.size(); ++i) paths.push_back(to_str(bases[i], where));
    else
      throw ConfigError(where + ": expected a path or a list of paths, found " + describe(bases));
    for (const auto& rel : paths) {
      const std::string p = resolve_rel(dir, rel);
      if (std::find(stack.begin(), stack.end(), p) != stack.end())
        throw ConfigError(where + ": cyclic _base_ chain through '" + p + "'");
      std::ifstream in(p);
      if (!in) throw ConfigError(where + ": cannot open base file '" + p + "'");
      std::stringstream ss;
      ss << in.rdbuf();
      stack.push_back(p);
      merged.reset(merge(merged, load_tree(ss.str(), p, dir_of(p), src, stack)));
      stack.pop_back();
    }
  }
  // Sources are recorded from the parsed nodes: `own`'s top-level keys are
  // new nodes without a position in the file.
  YAML::Node own(YAML::NodeType::Map);
  for (auto it = n.begin(); it != n.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (key == "_base_") continue;
    own[key] = it->second;
    src[key] = name + ":" + std::to_string(it->first.Mark().line + 1);
    record_sources(it->second, key, name, src);
  }
  return merge(merged, own);
}

std::string source_of(const Sources& src, const std::string& path) {
  // The nearest recorded ancestor: a value replaced wholesale (e.g. a map
  // set from the command line) is recorded only at its own path.
  std::string p = path;
  while (true) {
    auto it = src.find(p);
    if (it != src.end()) return it->second;
    size_t dot = p.rfind('.');
    if (dot == std::string::npos) return kDefault;
    p.resize(dot);
  }
}

std::vector<std::string> split_any(const std::string& s, const char* seps) {
  std::vector<std::string> out(1);
  for (char ch : s) {
    if (std::strchr(seps, ch)) out.emplace_back();
    else out.back() += ch;
  }
  return out;
}

// A typed word `a` names the candidate's word `b`: equal, a plural of each
// other ("step", "steps"), or a typo of it (edit distance <= 1 for 3-4
// typed letters, <= 2 from 5).
bool same_word(const std::string& a, const std::string& b) {
  if (a.empty() || b.empty()) return false;
  if (a == b || a + "s" == b || b + "s" == a) return true;
  const size_t n = a.size();  // the typed word's length sets the typos allowed
  const size_t allowed = n >= 5 ? 2 : n >= 3 ? 1 : 0;
  return allowed > 0 && edit_distance(a, b) <= allowed;
}

// "learning_rate" -> "lr": the initials of a name of several words.
std::string initials(const std::vector<std::string>& words) {
  std::string s;
  for (const auto& w : words)
    if (!w.empty()) s += w[0];
  return words.size() >= 2 ? s : "";
}


std::string suggestion(const ConfigSchema& schema, const std::string& path) {
  std::set<std::string> cands;
  for (const auto& k : schema.keys()) {
    cands.insert(k.path);
    for (size_t dot = k.path.find('.'); dot != std::string::npos; dot = k.path.find('.', dot + 1))
      cands.insert(k.path.substr(0, dot));
  }
  // Ranked by how the last component (the name the user had in mind) relates
  // to the candidate's, then by segments, then by letters; a candidate that
  // shares no word with the typed last component is never offered
  // ("train.learning_rate" -> "train.lr", not "train.max_nonfinite").
  const std::vector<std::string> segs = split_any(path, ".");
  const std::string& last = segs.back();
  const std::vector<std::string> words = split_any(last, "_");
  using Rank = std::tuple<int, size_t, size_t, size_t>;
  std::string best;
  Rank best_rank{99, 0, 0, 0};
  for (const auto& c : cands) {
    const std::vector<std::string> csegs = split_any(c, ".");
    const std::string& clast = csegs.back();
    const std::vector<std::string> cwords = split_any(clast, "_");
    auto shares = [&](const std::vector<std::string>& ws) {
      for (const auto& w : words)
        for (const auto& x : ws)
          if (same_word(w, x)) return true;
      return false;
    };
    int how = 99;
    if (same_word(last, clast) && (last == clast || last + "s" == clast || clast + "s" == last)) how = 0;
    else if (initials(words) == clast || initials(cwords) == last) how = 1;
    else if (same_word(last, clast)) how = 2;
    else if (shares(cwords)) how = 3;
    else {
      std::vector<std::string> other;
      for (size_t i = 0; i + 1 < csegs.size(); ++i)
        for (const auto& w : split_any(csegs[i], "_")) other.push_back(w);
      if (shares(other)) how = 4;
    }
    if (how == 99) continue;
    const Rank r{how, sequence_edit_distance(segs, csegs), edit_distance(last, clast), edit_distance(path, c)};
    if (r < best_rank) best_rank = r, best = c;
  }
  if (best.empty()) return "";
  return "; did you mean '" + best + "'?";
}

bool is_prefix_of_schema(const ConfigSchema& schema, const std::string& path) {
  for (const auto& k : schema.keys())
    if (k.path.rfind(path + ".", 0) == 0) return true;
  return false;
}

struct Validator {
  const ConfigSchema& schema;
  const Sources& src;
  std::vector<std::string> errors;

  void walk(const YAML::Node& n, const std::string& prefix) {
    for (auto it = n.begin(); it != n.end(); ++it) {
      const std::string path = join(prefix, it->first.Scalar());
      if (schema.find(path)) continue;  // typed below
      if (is_prefix_of_schema(schema, path)) {
        if (it->second.IsMap()) walk(it->second, path);
        else if (!it->second.IsNull())
          errors.push_back(source_of(src, path) + ": key '" + path + "': expected a map, found " +
                           describe(it->second));
        continue;
      }
      if (const std::string* to = schema.renamed_to(path))
        errors.push_back(source_of(src, path) + ": key '" + path + "' was renamed to '" + *to + "'");
      else
        errors.push_back(source_of(src, path) + ": unknown key '" + path + "'" + suggestion(schema, path));
    }
  }
};

void emit(YAML::Emitter& e, const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) {
    e << YAML::Null;
  } else if (n.IsScalar()) {
    // A string that would read back as another type keeps its quotes.
    if (n.Tag() == "!" && plain_kind(n.Scalar()) != ScalarKind::Str) e << YAML::DoubleQuoted << n.Scalar();
    else e << n.Scalar();
  } else if (n.IsSequence()) {
    bool flat = true;
    for (size_t i = 0; i < n.size(); ++i) flat = flat && !n[i].IsMap() && !n[i].IsSequence();
    if (flat) e << YAML::Flow;
    e << YAML::BeginSeq;
    for (size_t i = 0; i < n.size(); ++i) emit(e, n[i]);
    e << YAML::EndSeq;
  } else {
    // Sorted by key; a repeated key shows the value of its first entry each
    // time, as a lookup by key (child()) finds it. The order is sorted as
    // indices: assigning a YAML::Node writes into the node it refers to.
    std::vector<std::string> keys;
    std::vector<YAML::Node> values;
    for (auto it = n.begin(); it != n.end(); ++it) {
      keys.push_back(it->first.Scalar());
      values.push_back(it->second);
    }
    std::vector<size_t> order(keys.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return keys[a] < keys[b]; });
    if (keys.empty()) e << YAML::Flow;
    e << YAML::BeginMap;
    for (size_t i = 0, first = 0; i < order.size(); ++i) {
      if (keys[order[i]] != keys[order[first]]) first = i;
      e << YAML::Key << keys[order[i]] << YAML::Value;
      emit(e, values[order[first]]);
    }
    e << YAML::EndMap;
  }
}

}  // namespace

struct Config::Impl {
  YAML::Node root{YAML::NodeType::Map};
  Sources sources;
  ConfigSchema schema;

  std::string where(const std::string& key) const { return source_of(sources, key) + ": key '" + key + "'"; }

  YAML::Node need(const std::string& key) const {
    YAML::Node n = lookup(root, key);
    if (!n.IsDefined()) throw ConfigError("config has no key '" + key + "'" + suggestion(schema, key));
    if (n.IsNull()) throw ConfigError(where(key) + ": is not set (null)");
    return n;
  }
};

// yaml-cpp's Node::operator= writes through to the node it refers to, so
// every rebinding in this file uses reset() and copies use Clone().
static void copy_impl(Config::Impl& dst, const Config::Impl& src) {
  dst.root.reset(YAML::Clone(src.root));
  dst.sources = src.sources;
  dst.schema = src.schema;
}

Config::Config() : impl_(std::make_unique<Impl>()) {}
Config::~Config() = default;
Config::Config(const Config& o) : impl_(std::make_unique<Impl>()) { copy_impl(*impl_, *o.impl_); }
Config& Config::operator=(const Config& o) {
  if (this != &o) copy_impl(*impl_, *o.impl_);
  return *this;
}

struct ConfigBuilder {
  static Config finish(YAML::Node root, Sources src, const ConfigSchema& schema,
                       const std::vector<std::string>& overrides);
};

Config ConfigBuilder::finish(YAML::Node root, Sources src, const ConfigSchema& schema,
                             const std::vector<std::string>& overrides) {
  std::vector<std::string> errors;
  for (const auto& ov : overrides) {
    size_t eq = ov.find('=');
    if (eq == std::string::npos || eq == 0) {
      errors.push_back(std::string(kCommandLine) + ": override '" + ov + "' is not of the form key.path=value");
      continue;
    }
    const std::string key = ov.substr(0, eq);
    if (ov.find_first_not_of(" \t", eq + 1) == std::string::npos) {
      errors.push_back(std::string(kCommandLine) + ": override '" + ov + "' gives key '" + key +
                       "' no value; write " + key + "=~ to unset it");
      continue;
    }
    YAML::Node value;
    try {
      value = YAML::Load(ov.substr(eq + 1));
    } catch (const YAML::ParserException& e) {
      errors.push_back(std::string(kCommandLine) + ": override '" + ov + "': YAML syntax error: " + e.msg);
      continue;
    }
    root.reset(with_value(root, split_path(key), 0, value));
    for (auto it = src.begin(); it != src.end();)  // values below were replaced
      it = it->first.rfind(key + ".", 0) == 0 ? src.erase(it) : std::next(it);
    src[key] = kCommandLine;
    // A section the files did not have was made by this override.
    for (size_t dot = key.find('.'); dot != std::string::npos; dot = key.find('.', dot + 1))
      src.emplace(key.substr(0, dot), kCommandLine);
  }

  Validator v{schema, src, {}};
  v.walk(root, "");
  errors.insert(errors.end(), v.errors.begin(), v.errors.end());

  // Each key's checked value, in schema order. They are set into a tree built
  // once at the end: replacing them one by one (with_value) copied the tree
  // per key and made yaml-cpp merge ever larger node memories, quadratic in
  // the number of keys. Schema keys are neither equal nor nested, so setting
  // one never changes what another reads.
  PathIndex index(root);
  std::vector<std::pair<std::string, YAML::Node>> values;
  values.reserve(schema.keys().size());
  auto set = [&](const std::string& path, const YAML::Node& value) { values.emplace_back(path, value); };
  for (const auto& k : schema.keys()) {
    YAML::Node n = index.lookup(k.path);
    const std::string where = source_of(src, k.path) + ": key '" + k.path + "'";
    if (!n.IsDefined() || n.IsNull()) {
      if (k.required) {
        errors.push_back("missing required key '" + k.path + "' (" + config_type_name(k.type) + ": " + k.help + ")");
        continue;
      }
      YAML::Node d = default_value(k);
      if (n.IsDefined() && !d.IsNull()) {
        errors.push_back(where + ": expected " + config_type_name(k.type) + ", found null");
        continue;
      }
      set(k.path, d);
      if (!n.IsDefined()) src[k.path] = kDefault;
      continue;
    }
    try {
      set(k.path, canonical(n, k.type, where));
    } catch (const ConfigError& e) {
      errors.push_back(e.what());
    }
  }
  if (!errors.empty()) {
    std::string msg = "invalid config:";
    for (const auto& e : errors) msg += "\n  " + e;
    throw ConfigError(msg);
  }
  // Every path the tree held is a schema key or lies on the way to one (the
  // validator passed) and every schema key has a value now, so the tree of
  // the values is the whole config.
  Config c;
  c.impl_->root.reset(tree_of(values));
  c.impl_->sources = std::move(src);
  c.impl_->schema = schema;
  return c;
}

Config Config::load(const std::string& path, const ConfigSchema& schema, const std::vector<std::string>& overrides) {
  std::ifstream in(path);
  if (!in) throw ConfigError("cannot open config file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  Sources src;
  std::vector<std::string> stack{path};
  YAML::Node root = load_tree(ss.str(), path, dir_of(path), src, stack);
  return ConfigBuilder::finish(root, std::move(src), schema, overrides);
}

Config Config::parse(const std::string& yaml_text, const ConfigSchema& schema, const std::vector<std::string>& overrides,
                     const std::string& source_name, const std::string& base_dir) {
  Sources src;
  std::vector<std::string> stack;
  YAML::Node root = load_tree(yaml_text, source_name, base_dir, src, stack);
  return ConfigBuilder::finish(root, std::move(src), schema, overrides);
}

bool Config::has(const std::string& key) const {
  YAML::Node n = lookup(impl_->root, key);
  return n.IsDefined() && !n.IsNull();
}

std::string Config::source(const std::string& key) const { return source_of(impl_->sources, key); }

std::vector<std::string> Config::children(const std::string& key) const {
  YAML::Node n = key.empty() ? impl_->root : lookup(impl_->root, key);
  std::vector<std::string> out;
  if (n.IsDefined() && n.IsMap())
    for (auto it = n.begin(); it != n.end(); ++it) out.push_back(it->first.Scalar());
  std::sort(out.begin(), out.end());
  return out;
}

template <>
int64_t Config::get<int64_t>(const std::string& key) const {
  return to_int(impl_->need(key), impl_->where(key));
}
template <>
int Config::get<int>(const std::string& key) const {
  int64_t v = get<int64_t>(key);
  if (v < INT32_MIN || v > INT32_MAX) throw ConfigError(impl_->where(key) + ": " + std::to_string(v) + " does not fit an int");
  return static_cast<int>(v);
}
template <>
double Config::get<double>(const std::string& key) const {
  return to_float(impl_->need(key), impl_->where(key));
}
template <>
float Config::get<float>(const std::string& key) const {
  return static_cast<float>(get<double>(key));
}
template <>
bool Config::get<bool>(const std::string& key) const {
  return to_bool(impl_->need(key), impl_->where(key));
}
template <>
std::string Config::get<std::string>(const std::string& key) const {
  return to_str(impl_->need(key), impl_->where(key));
}

template <typename T, typename F>
static std::vector<T> get_list(const Config::Impl& impl, const std::string& key, const char* type, F one) {
  YAML::Node n = impl.need(key);
  const std::string where = impl.where(key);
  if (!n.IsSequence()) throw ConfigError(where + ": expected " + type + ", found " + describe(n));
  std::vector<T> out;
  for (size_t i = 0; i < n.size(); ++i) out.push_back(static_cast<T>(one(n[i], where + "[" + std::to_string(i) + "]")));
  return out;
}

template <>
std::vector<int64_t> Config::get<std::vector<int64_t>>(const std::string& key) const {
  return get_list<int64_t>(*impl_, key, "list<int>", to_int);
}
template <>
std::vector<int> Config::get<std::vector<int>>(const std::string& key) const {
  return get_list<int>(*impl_, key, "list<int>", [](const YAML::Node& n, const std::string& w) {
    int64_t v = to_int(n, w);
    if (v < INT32_MIN || v > INT32_MAX) throw ConfigError(w + ": " + std::to_string(v) + " does not fit an int");
    return static_cast<int>(v);
  });
}
template <>
std::vector<double> Config::get<std::vector<double>>(const std::string& key) const {
  return get_list<double>(*impl_, key, "list<float>", to_float);
}
template <>
std::vector<float> Config::get<std::vector<float>>(const std::string& key) const {
  return get_list<float>(*impl_, key, "list<float>", to_float);
}
template <>
std::vector<std::string> Config::get<std::vector<std::string>>(const std::string& key) const {
  return get_list<std::string>(*impl_, key, "list<string>", to_str);
}
template <>
std::map<std::string, std::string> Config::get<std::map<std::string, std::string>>(const std::string& key) const {
  YAML::Node n = impl_->need(key);
  const std::string where = impl_->where(key);
  if (!n.IsMap()) throw ConfigError(where + ": expected map, found " + describe(n));
  std::map<std::string, std::string> out;
  for (auto it = n.begin(); it != n.end(); ++it)
    out[it->first.Scalar()] = to_str(it->second, where + "." + it->first.Scalar());
  return out;
}

void Config::set_string(const std::string& key, const std::string& value, const std::string& source) {
  const ConfigKey* k = impl_->schema.find(key);
  if (!k || k->type != ConfigType::String)
    throw ConfigError("set_string: '" + key + "' is not a string key of the schema" + suggestion(impl_->schema, key));
  YAML::Node v(value);
  v.SetTag("!");  // a string, whatever it looks like (see canonical())
  impl_->root.reset(with_value(impl_->root, split_path(key), 0, v));
  impl_->sources[key] = source;
}

void Config::set(const std::string& key, const std::string& yaml_value, const std::string& source) {
  const ConfigKey* k = impl_->schema.find(key);
  if (!k || k->type == ConfigType::Map)
    throw ConfigError("set: '" + key + "' is not a scalar or list key of the schema" + suggestion(impl_->schema, key));
  YAML::Node v;
  try {
    v = YAML::Load(yaml_value);
  } catch (const YAML::ParserException& e) {
    throw ConfigError(source + ": key '" + key + "': YAML syntax error in '" + yaml_value + "': " + e.msg);
  }
  v.reset(canonical(v, k->type, source + ": key '" + key + "'"));
  impl_->root.reset(with_value(impl_->root, split_path(key), 0, v));
  impl_->sources[key] = source;
}

std::string Config::to_yaml() const {
  YAML::Emitter e;
  emit(e, impl_->root);
  return std::string(e.c_str()) + "\n";
}

void Config::save(const std::string& path) const { write_file_atomic(path, to_yaml()); }

uint64_t Config::digest() const { return digest(std::vector<std::string>{}); }

std::string Config::digest_hex() const { return digest_hex(std::vector<std::string>{}); }

uint64_t Config::digest(const std::vector<std::string>& excluded) const {
  // A copy only when keys are removed from it.
  YAML::Node root = excluded.empty() ? impl_->root : YAML::Clone(impl_->root);
  for (const std::string& key : excluded) {
    const std::vector<std::string> parts = split_path(key);
    YAML::Node parent = root;
    bool found = true;
    for (size_t i = 0; i + 1 < parts.size() && found; ++i) {
      // Read through a const node: operator[] on a mutable one inserts the key.
      const YAML::Node& cur = parent;
      YAML::Node next = cur[parts[i]];
      found = next.IsDefined() && next.IsMap();
      if (found) parent.reset(next);
    }
    if (found && parent.IsMap() && static_cast<const YAML::Node&>(parent)[parts.back()].IsDefined())
      parent.remove(parts.back());
  }
  YAML::Emitter e;
  emit(e, root);
  const std::string text = std::string(e.c_str()) + "\n";
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string Config::digest_hex(const std::vector<std::string>& excluded) const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest(excluded)));
  return buf;
}

CommandArgs split_command_args(const std::vector<std::string>& args,
                               const std::function<bool(const std::string&)>& is_command_key,
                               const std::string& command) {
  CommandArgs out;
  for (const std::string& a : args) {
    const auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0) throw ConfigError("argument '" + a + "' is not key=value");
    const std::string key = a.substr(0, eq);
    if (!is_command_key(key)) {
      out.overrides.push_back(a);
      continue;
    }
    if (!out.options.emplace(key, a.substr(eq + 1)).second) throw ConfigError(command + ": " + key + " given twice");
  }
  return out;
}

}  // namespace vt
