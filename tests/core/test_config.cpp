#include <gtest/gtest.h>

#include <filesystem>

#include "core/config.h"
#include "test_fs.h"

using namespace vt;
using vt_test::error_of;
using vt_test::TmpDir;

namespace {

ConfigSchema schema() {
  ConfigSchema s;
  s.required("data.root", ConfigType::String, "ImageFolder root")
      .optional("data.workers", ConfigType::Int, "4", "loader threads")
      .optional("train.epochs", ConfigType::Int, "300", "epochs")
      .optional("train.lr", ConfigType::Float, "5e-4", "peak learning rate")
      .optional("train.amp", ConfigType::Bool, "false", "bf16 autocast")
      .optional("train.betas", ConfigType::FloatList, "[0.9, 0.999]", "AdamW betas")
      .optional("model.depths", ConfigType::IntList, "[12]", "block counts")
      .optional("model.norm.scheme", ConfigType::String, "siamese", "pre | post | siamese")
      .optional("model.extra", ConfigType::Map, "{}", "free-form")
      .optional("run.tags", ConfigType::StringList, "[]", "labels")
      .optional("run.name", ConfigType::String, "~", "run name (unset: derived)")
      .optional("resume", ConfigType::String, "auto", "auto | never | DIR");
  return s;
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

}  // namespace

TEST(Config, DefaultsAndTypedGetters) {
  Config c = Config::parse("data: {root: /data/in1k}\ntrain: {lr: 1e-3, amp: True}\n", schema());
  EXPECT_EQ(c.get<std::string>("data.root"), "/data/in1k");
  EXPECT_EQ(c.get<int>("data.workers"), 4);
  EXPECT_EQ(c.get<int64_t>("train.epochs"), 300);
  EXPECT_DOUBLE_EQ(c.get<double>("train.lr"), 1e-3);
  EXPECT_FLOAT_EQ(c.get<float>("train.lr"), 1e-3f);
  EXPECT_TRUE(c.get<bool>("train.amp"));
  EXPECT_EQ(c.get<std::vector<double>>("train.betas"), (std::vector<double>{0.9, 0.999}));
  EXPECT_EQ(c.get<std::vector<int>>("model.depths"), (std::vector<int>{12}));
  EXPECT_TRUE(c.get<std::vector<std::string>>("run.tags").empty());
  EXPECT_FALSE(c.has("run.name"));
  EXPECT_EQ(c.get_or<std::string>("run.name", "derived"), "derived");
  EXPECT_EQ(c.source("train.lr"), "<string>:2");
  EXPECT_EQ(c.source("train.epochs"), "default");
  EXPECT_TRUE(contains(error_of([&] { c.get<std::string>("run.name"); }), "is not set"));
  EXPECT_TRUE(contains(error_of([&] { c.get<int>("train.lr"); }), "expected int, found float '0.001'"));
  std::string msg = error_of([&] { c.get<int>("train.epoch"); });
  EXPECT_TRUE(contains(msg, "no key 'train.epoch'") && contains(msg, "did you mean 'train.epochs'")) << msg;
}

TEST(Config, InheritanceTwoLevelsDeep) {
  TmpDir d;
  std::filesystem::create_directories(d.file("configs/base"));
  d.write("configs/base/root.yaml",
          "data:\n  root: /root\n  workers: 2\ntrain:\n  epochs: 10\n  betas: [0.5, 0.6]\n"
          "model:\n  extra: {a: 1, b: 2}\n");
  d.write("configs/base/mid.yaml",
          "_base_: root.yaml\ntrain:\n  epochs: 20\n  lr: 0.1\nmodel:\n  extra: {b: 3}\n  depths: [1, 2]\n");
  d.write("configs/other.yaml", "run:\n  tags: [x]\ntrain: {amp: true}\n");
  d.write("configs/child.yaml",
          "_base_: [base/mid.yaml, other.yaml]\ntrain:\n  lr: 0.2\n  betas: [0.7]\n");
  Config c = Config::load(d.file("configs/child.yaml"), schema());
  EXPECT_EQ(c.get<std::string>("data.root"), "/root");           // from the root
  EXPECT_EQ(c.get<int>("data.workers"), 2);                      // root, not the default
  EXPECT_EQ(c.get<int>("train.epochs"), 20);                     // mid wins over root
  EXPECT_DOUBLE_EQ(c.get<double>("train.lr"), 0.2);              // child wins over mid
  EXPECT_EQ(c.get<std::vector<double>>("train.betas"), (std::vector<double>{0.7}));  // lists replace
  EXPECT_TRUE(c.get<bool>("train.amp"));                         // second base
  EXPECT_EQ(c.get<std::vector<std::string>>("run.tags"), (std::vector<std::string>{"x"}));
  EXPECT_EQ(c.get<int>("model.extra.a"), 1);                     // maps merge
  EXPECT_EQ(c.get<int>("model.extra.b"), 3);
  EXPECT_EQ(c.children("model.extra"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(c.source("train.epochs"), d.file("configs/base/mid.yaml") + ":3");
  EXPECT_EQ(c.source("data.root"), d.file("configs/base/root.yaml") + ":2");
  EXPECT_FALSE(c.has("_base_"));
}

TEST(Config, BaseErrors) {
  TmpDir d;
  d.write("a.yaml", "_base_: b.yaml\n");
  d.write("b.yaml", "_base_: a.yaml\n");
  std::string msg = error_of([&] { Config::load(d.file("a.yaml"), schema()); });
  EXPECT_TRUE(contains(msg, "cyclic _base_")) << msg;
  d.write("c.yaml", "data: {root: x}\n_base_: missing.yaml\n");
  msg = error_of([&] { Config::load(d.file("c.yaml"), schema()); });
  EXPECT_TRUE(contains(msg, d.file("c.yaml") + ":2: _base_: cannot open base file")) << msg;
  msg = error_of([&] { Config::load(d.file("nope.yaml"), schema()); });
  EXPECT_TRUE(contains(msg, "cannot open config file")) << msg;
}

TEST(Config, OverridesUseYamlTyping) {
  Config c = Config::parse("data: {root: a}\n", schema(),
                           {"train.lr=1e-3", "train.amp=true", "data.root=foo", "model.depths=[1,2]",
                            "train.epochs=7", "model.extra={k: v}", "run.name=~", "resume=123"});
  EXPECT_DOUBLE_EQ(c.get<double>("train.lr"), 1e-3);
  EXPECT_TRUE(c.get<bool>("train.amp"));
  EXPECT_EQ(c.get<std::string>("data.root"), "foo");
  EXPECT_EQ(c.get<std::vector<int64_t>>("model.depths"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.get<int>("train.epochs"), 7);
  EXPECT_EQ((c.get<std::map<std::string, std::string>>("model.extra")), (std::map<std::string, std::string>{{"k", "v"}}));
  EXPECT_FALSE(c.has("run.name"));
  EXPECT_EQ(c.get<std::string>("resume"), "123");  // any scalar is a valid string
  EXPECT_EQ(c.source("train.lr"), "command line");
  // The override's type is checked like a file value.
  std::string msg = error_of([] { Config::parse("data: {root: a}\n", schema(), {"train.epochs=1.5"}); });
  EXPECT_TRUE(contains(msg, "command line: key 'train.epochs': expected int, found float '1.5'")) << msg;
  msg = error_of([] { Config::parse("data: {root: a}\n", schema(), {"train.lr"}); });
  EXPECT_TRUE(contains(msg, "override 'train.lr' is not of the form key.path=value")) << msg;
  msg = error_of([] { Config::parse("data: {root: a}\n", schema(), {"train.lr=[1,"}); });
  EXPECT_TRUE(contains(msg, "override 'train.lr=[1,': YAML syntax error")) << msg;
}

TEST(Config, UnknownKeySuggestsNearest) {
  TmpDir d;
  const std::string p = d.write("u.yaml", "data:\n  root: r\ntrain:\n  epochs: 3\n  lrr: 0.1\n");
  std::string msg = error_of([&] { Config::load(p, schema()); });
  EXPECT_TRUE(contains(msg, p + ":5: unknown key 'train.lrr'; did you mean 'train.lr'?")) << msg;
  msg = error_of([] { Config::parse("data: {root: r}\n", schema(), {"model.norm.schem=pre"}); });
  EXPECT_TRUE(contains(msg, "command line: unknown key 'model.norm.schem'; did you mean 'model.norm.scheme'?")) << msg;
  msg = error_of([] { Config::parse("data: {root: r}\ntrian: {epochs: 1}\n", schema()); });
  EXPECT_TRUE(contains(msg, "unknown key 'trian'; did you mean 'train'?")) << msg;
  // Nothing close: no suggestion.
  msg = error_of([] { Config::parse("data: {root: r}\nzzzzzzzzzzzzzzzzzz: 1\n", schema()); });
  EXPECT_TRUE(contains(msg, "unknown key 'zzzzzzzzzzzzzzzzzz'")) << msg;
  EXPECT_FALSE(contains(msg, "did you mean")) << msg;
}

TEST(Config, WrongTypesNameKeyFileExpectedAndFound) {
  struct Case {
    std::string yaml, expect;
  };
  const std::vector<Case> cases = {
      {"train: {epochs: ten}", "<string>:2: key 'train.epochs': expected int, found string 'ten'"},
      {"train: {lr: \"1e-3\"}", "key 'train.lr': expected float, found string '1e-3'"},
      {"train: {amp: yes}", "key 'train.amp': expected bool, found string 'yes'"},
      {"train: {betas: 0.9}", "key 'train.betas': expected list<float>, found float '0.9'"},
      {"train: {betas: [0.9, x]}", "key 'train.betas'[1]: expected float, found string 'x'"},
      {"model: {depths: [1, 2.5]}", "key 'model.depths'[1]: expected int, found float '2.5'"},
      {"model: {extra: 3}", "key 'model.extra': expected map, found int '3'"},
      {"model: {norm: pre}", "key 'model.norm': expected a map, found string 'pre'"},
      {"run: {tags: [[a]]}", "key 'run.tags'[0]: expected string, found list [a]"},
      {"train: {epochs: ~}", "key 'train.epochs': expected int, found null"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    std::string msg = error_of([&] { Config::parse("data: {root: r}\n" + c.yaml + "\n", schema()); });
    EXPECT_TRUE(contains(msg, c.expect)) << msg;
  }
  // Several problems are reported together.
  std::string msg = error_of([] { Config::parse("train: {epochs: x, lrr: 1}\n", schema()); });
  EXPECT_TRUE(contains(msg, "train.epochs") && contains(msg, "train.lrr") && contains(msg, "data.root")) << msg;
}

TEST(Config, MissingRequiredKey) {
  std::string msg = error_of([] { Config::parse("train: {epochs: 1}\n", schema()); });
  EXPECT_TRUE(contains(msg, "missing required key 'data.root' (string: ImageFolder root)")) << msg;
  msg = error_of([] { Config::parse("data: {root: ~}\n", schema()); });
  EXPECT_TRUE(contains(msg, "missing required key 'data.root'")) << msg;
}

TEST(Config, BadYamlNamesFileAndLine) {
  TmpDir d;
  const std::string p = d.write("bad.yaml", "data:\n  root: r\ntrain:\n  epochs: [1, 2\n  lr: 3\n");
  std::string msg = error_of([&] { Config::load(p, schema()); });
  EXPECT_TRUE(contains(msg, p + ":")) << msg;
  EXPECT_TRUE(contains(msg, "YAML syntax error")) << msg;
  // yaml-cpp reports the unterminated flow sequence where it gives up; the
  // line must be within the file, at or after the opening bracket (line 4).
  size_t at = msg.find(p + ":") + p.size() + 1;
  int line = std::stoi(msg.substr(at));
  EXPECT_GE(line, 4);
  EXPECT_LE(line, 6);
  const std::string p2 = d.write("tabs.yaml", "data:\n  root: r\n\tbad: 1\n");
  msg = error_of([&] { Config::load(p2, schema()); });
  EXPECT_TRUE(contains(msg, p2 + ":3:")) << msg;
  const std::string p3 = d.write("list.yaml", "- 1\n- 2\n");
  msg = error_of([&] { Config::load(p3, schema()); });
  EXPECT_TRUE(contains(msg, "the top level must be a map")) << msg;
}

TEST(Config, ResolvedYamlRoundTripsAndDigestIsStable) {
  TmpDir d;
  Config a = Config::parse(
      "data: {root: '123'}\ntrain: {lr: 0.0001, betas: [1, 0.95]}\nmodel: {extra: {s: \"true\", n: 2}}\n"
      "run: {tags: [a b, 'no', \"1.5\"]}\n",
      schema());
  const std::string y = a.to_yaml();
  EXPECT_FALSE(contains(y, "_base_"));
  a.save(d.file("resolved.yaml"));
  Config b = Config::load(d.file("resolved.yaml"), schema());
  EXPECT_EQ(b.to_yaml(), y);
  EXPECT_EQ(b.digest(), a.digest());
  EXPECT_EQ(b.get<std::string>("data.root"), "123");
  EXPECT_EQ(b.get<std::string>("model.extra.s"), "true");
  EXPECT_EQ(b.get<std::vector<std::string>>("run.tags"), (std::vector<std::string>{"a b", "no", "1.5"}));
  EXPECT_EQ(b.get<std::vector<double>>("train.betas"), (std::vector<double>{1.0, 0.95}));
  EXPECT_DOUBLE_EQ(b.get<double>("train.lr"), 1e-4);
  EXPECT_EQ(b.get<int>("train.epochs"), 300);  // default written out
  // Same values spelled differently give the same digest; a change differs.
  Config c = Config::parse("train: {betas: [1.0, 9.5e-1], lr: 1e-4}\nrun: {tags: [a b, 'no', '1.5']}\n"
                           "model: {extra: {n: 2, s: 'true'}}\ndata: {root: \"123\"}\n",
                           schema());
  EXPECT_EQ(c.digest(), a.digest());
  EXPECT_EQ(c.digest_hex().size(), 16u);
  Config e = Config::parse("data: {root: '123'}\n", schema(), {"train.lr=2e-4"});
  EXPECT_NE(e.digest(), a.digest());
}

TEST(Config, SetStringReplacesAValueThatSavesAndReloads) {
  TmpDir d;
  Config a = Config::parse("data: {root: rel/dir}\n", schema(), {}, "a.yaml");
  a.set_string("data.root", "/abs/dir: with colon #", "a.yaml:1 (made absolute)");
  a.set_string("run.name", "true", "test");  // looks like a bool, stays a string
  EXPECT_EQ(a.get<std::string>("data.root"), "/abs/dir: with colon #");
  EXPECT_EQ(a.source("data.root"), "a.yaml:1 (made absolute)");
  a.save(d.file("s.yaml"));
  Config b = Config::load(d.file("s.yaml"), schema());
  EXPECT_EQ(b.get<std::string>("data.root"), "/abs/dir: with colon #");
  EXPECT_EQ(b.get<std::string>("run.name"), "true");
  EXPECT_EQ(b.digest(), a.digest());
  // Spelled in a file, the same values give the same config.
  Config c = Config::parse("data: {root: '/abs/dir: with colon #'}\nrun: {name: 'true'}\n", schema());
  EXPECT_EQ(c.digest(), a.digest());
  EXPECT_TRUE(contains(error_of([&] { a.set_string("train.lr", "1", "x"); }), "not a string key"));
  EXPECT_TRUE(contains(error_of([&] { a.set_string("data.rot", "1", "x"); }), "did you mean 'data.root'"));
}

TEST(Config, SchemaRejectsBadDefinitions) {
  ConfigSchema s;
  s.optional("a.b", ConfigType::Int, "1", "");
  EXPECT_THROW(s.optional("a.b", ConfigType::Int, "1", ""), std::logic_error);
  EXPECT_THROW(s.optional("a.b.c", ConfigType::Int, "1", ""), std::logic_error);
  EXPECT_THROW(s.optional("x", ConfigType::Int, "1.5", ""), std::logic_error);
  EXPECT_THROW(s.optional("y", ConfigType::IntList, "[1, a]", ""), std::logic_error);
  EXPECT_TRUE(contains(schema().help_text(), "train.lr")) << schema().help_text();
}

TEST(Config, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("train.lrr", "train.lr"), 1u);
  EXPECT_EQ(edit_distance("flaw", "lawn"), 2u);
}

TEST(Config, FloatCanonicalFormKeepsFloats) {
  Config c = Config::parse("data: {root: r}\ntrain: {lr: 1, betas: [1e-5, .inf, 0.1]}\n", schema());
  const std::string y = c.to_yaml();
  EXPECT_TRUE(contains(y, "lr: 1.0")) << y;
  EXPECT_TRUE(contains(y, "[1.0e-05, .inf, 0.1]")) << y;
}

// A top-level scalar key is named at its own line (it was ":0": the merged
// map's new key nodes carry no position), with and without a _base_.
TEST(Config, TopLevelKeysNamedAtTheirLine) {
  TmpDir d;
  d.write("base.yaml", "data: {root: /r}\n");
  d.write("child.yaml", "_base_: base.yaml\n\nresume: 12\n");
  Config c = Config::load(d.file("child.yaml"), schema());
  EXPECT_EQ(c.source("resume"), d.file("child.yaml") + ":3");
  EXPECT_EQ(c.source("data.root"), d.file("base.yaml") + ":1");
  d.write("bad.yaml", "data: {root: /r}\nresume: [1]\n");
  const std::string msg = error_of([&] { Config::load(d.file("bad.yaml"), schema()); });
  EXPECT_TRUE(contains(msg, d.file("bad.yaml") + ":2")) << msg;
}

// An unknown section made by a command-line override is blamed on the
// command line, not on "default".
TEST(Config, UnknownSectionFromTheCommandLineNamesIt) {
  const std::string msg = error_of([] { Config::parse("data: {root: a}\n", schema(), {"foo.bar=1"}); });
  EXPECT_TRUE(contains(msg, "command line: unknown key 'foo'")) << msg;
  Config c = Config::parse("data: {root: a}\ntrain: {lr: 1}\n", schema(), {"train.epochs=3"});
  EXPECT_EQ(c.source("train.lr"), "<string>:2");  // a section the file has keeps its lines
  EXPECT_EQ(c.source("train.epochs"), "command line");
}

// A key written twice keeps one of the two values in YAML parsers; a second
// section replaced the whole first one (its lr, epochs, ...). Every repeat is
// an error naming the file and both lines, in the file and in its bases.
TEST(Config, RepeatedKeysAreErrorsNamingBothLines) {
  TmpDir d;
  d.write("sections.yaml", "data: {root: /r}\ntrain:\n  lr: 0.1\n  epochs: 5\nrun: {name: x}\ntrain:\n  amp: true\n");
  std::string msg = error_of([&] { Config::load(d.file("sections.yaml"), schema()); });
  EXPECT_TRUE(contains(msg, d.file("sections.yaml") + ":6: key 'train' is repeated (first at " +
                                d.file("sections.yaml") + ":2)")) << msg;
  d.write("scalar.yaml", "data: {root: /r}\ntrain:\n  lr: 0.1\n  lr: 0.2\n");
  msg = error_of([&] { Config::load(d.file("scalar.yaml"), schema()); });
  EXPECT_TRUE(contains(msg, d.file("scalar.yaml") + ":4: key 'train.lr' is repeated (first at " +
                                d.file("scalar.yaml") + ":3)")) << msg;
  d.write("deep.yaml", "model:\n  extra: {a: 1, b: 2, a: 3}\n");
  d.write("child.yaml", "_base_: deep.yaml\ndata: {root: /r}\n");
  msg = error_of([&] { Config::load(d.file("child.yaml"), schema()); });
  EXPECT_TRUE(contains(msg, d.file("deep.yaml") + ":2: key 'model.extra.a' is repeated")) << msg;
  msg = error_of([] { Config::parse("data: {root: /r}\ndata: {root: /s}\n", schema()); });
  EXPECT_TRUE(contains(msg, "<string>:2: key 'data' is repeated (first at <string>:1)")) << msg;
  // The same key in different maps, or in a base and its child, is fine.
  d.write("ok.yaml", "_base_: child2.yaml\ntrain: {lr: 0.3}\nmodel: {extra: {lr: 1}}\n");
  d.write("child2.yaml", "data: {root: /r}\ntrain: {lr: 0.1}\n");
  EXPECT_DOUBLE_EQ(Config::load(d.file("ok.yaml"), schema()).get<double>("train.lr"), 0.3);
}

// `key=` (a shell variable that was empty) was read as null and so as the
// key's default; unsetting is spelled `key=~`.
TEST(Config, EmptyOverrideIsAnErrorNamingTheKey) {
  std::string msg = error_of([] { Config::parse("data: {root: a}\ntrain: {lr: 0.1}\n", schema(), {"train.lr="}); });
  EXPECT_TRUE(contains(msg, "command line: override 'train.lr=' gives key 'train.lr' no value; write train.lr=~ to unset it"))
      << msg;
  msg = error_of([] { Config::parse("data: {root: a}\n", schema(), {"run.name=  "}); });
  EXPECT_TRUE(contains(msg, "key 'run.name' no value")) << msg;
  Config c = Config::parse("data: {root: a}\nrun: {name: n}\n", schema(), {"run.name=~"});
  EXPECT_FALSE(c.has("run.name"));
  c = Config::parse("data: {root: a}\nrun: {name: n}\n", schema(), {"run.name=null"});
  EXPECT_FALSE(c.has("run.name"));
}

TEST(Config, SetChecksTheTypeAndRecordsTheSource) {
  Config a = Config::parse("data: {root: /r}\n", schema(), {}, "a.yaml");
  a.set("train.epochs", "12", "model.preset");
  a.set("train.lr", "2", "x");  // an int literal is a valid float
  a.set("model.depths", "[1, 2]", "x");
  EXPECT_EQ(a.get<int>("train.epochs"), 12);
  EXPECT_EQ(a.source("train.epochs"), "model.preset");
  EXPECT_TRUE(contains(a.to_yaml(), "lr: 2.0")) << a.to_yaml();
  EXPECT_EQ(a.get<std::vector<int>>("model.depths"), (std::vector<int>{1, 2}));
  EXPECT_TRUE(contains(error_of([&] { a.set("train.epochs", "1.5", "src"); }), "src: key 'train.epochs': expected int"));
  EXPECT_TRUE(contains(error_of([&] { a.set("train.epoch", "1", "x"); }), "did you mean 'train.epochs'"));
  EXPECT_TRUE(contains(error_of([&] { a.set("model.extra", "{}", "x"); }), "not a scalar or list key"));
}
