// The config helpers both trainers and veval share: CONFIG lookup (as given,
// then each configs directory, refusing directories), path resolution
// (file values against the file's directory's parent, command-line values
// against the CWD), range checks, renamed keys, and the resume digest that
// ignores run-control keys.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/config.h"
#include "core/config_checks.h"
#include "core/config_paths.h"
#include "core/run_control.h"
#include "test_fs.h"

using namespace vt;
namespace fs = std::filesystem;

namespace {

ConfigSchema schema() {
  ConfigSchema s;
  s.optional("name", ConfigType::String, "run", "")
      .optional("out_dir", ConfigType::String, "runs", "")
      .optional("resume", ConfigType::String, "auto", "")
      .optional("threads", ConfigType::Int, "0", "")
      .optional("data.root", ConfigType::String, "data", "")
      .optional("data.workers", ConfigType::Int, "2", "")
      .optional("train.lr", ConfigType::Float, "1e-3", "")
      .optional("train.batch_size", ConfigType::Int, "8", "")
      .optional("train.max_steps", ConfigType::Int, "~", "")
      .optional("log.every_steps", ConfigType::Int, "10", "")
      .optional("ckpt.every_steps", ConfigType::Int, "0", "")
      .renamed("train.global_batch", "train.batch_size")
      .renamed("log.every", "log.every_steps");
  return s;
}

bool contains(const std::string& s, const std::string& sub) { return s.find(sub) != std::string::npos; }

}  // namespace

TEST(ConfigPaths, FindConfigTriesEachDirectoryInOrderAndRefusesDirectories) {
  vt_test::TmpDir tmp;
  fs::create_directories(tmp.file("first/sub"));
  fs::create_directories(tmp.file("second"));
  const std::string a2 = tmp.write("second/a.yaml", "name: a\n");
  const std::string b1 = tmp.write("first/b.yaml", "name: b1\n");
  tmp.write("second/b.yaml", "name: b2\n");
  const std::vector<std::string> dirs{tmp.file("first"), tmp.file("second")};
  EXPECT_EQ(find_config(a2, dirs), a2);                     // a path as given
  EXPECT_EQ(find_config("a", dirs), tmp.file("second/a.yaml"));  // .yaml appended, second directory
  EXPECT_EQ(find_config("a.yaml", dirs), tmp.file("second/a.yaml"));
  EXPECT_EQ(find_config("b", dirs), b1);                    // the first directory wins
  const std::string missing = vt_test::error_of([&] { find_config("c", dirs); });
  EXPECT_TRUE(contains(missing, "not found")) << missing;
  EXPECT_TRUE(contains(missing, tmp.file("first/c.yaml"))) << missing;
  EXPECT_TRUE(contains(missing, tmp.file("second/c.yaml"))) << missing;
  const std::string dir = vt_test::error_of([&] { find_config("sub", dirs); });
  EXPECT_TRUE(contains(dir, "is a directory")) << dir;
  EXPECT_THROW(find_config(tmp.file("first"), dirs), ConfigError);
  // An absolute path is one file, never looked up in the directories.
  EXPECT_THROW(find_config("/nonexistent/a", {tmp.file("second")}), ConfigError);
}

TEST(ConfigPaths, SearchDirsPutTheInstalledConfigsBeforeTheCompiledInOnes) {
  // This test binary lives in <build>/tests: <build>/share/vtrain/configs first.
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  const auto dirs = config_search_dirs("/src/configs");
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_EQ(dirs[0], (exe.parent_path().parent_path() / "share/vtrain/configs").lexically_normal().string());
  EXPECT_EQ(dirs[1], "/src/configs");
}

TEST(ConfigPaths, FileValuesResolveAgainstTheConfigsParentCommandLineAgainstTheCwd) {
  vt_test::TmpDir tmp;
  fs::create_directories(tmp.file("repo/configs"));
  fs::create_directories(tmp.file("cwd"));
  const std::string path = tmp.write("repo/configs/x.yaml", "data: {root: ../d}\nresume: ck/step_3\nout_dir: o\n");
  vt_test::ChdirGuard cd(tmp.file("cwd"));
  const Config c = Config::load(path, schema());
  // ../d from repo/configs/x.yaml: repo/../d.
  EXPECT_EQ(resolve_path(c, "data.root", path), tmp.file("d"));
  const Config a = with_absolute_trainer_paths(c, path);
  EXPECT_EQ(a.get<std::string>("data.root"), tmp.file("d"));
  EXPECT_EQ(a.get<std::string>("resume"), tmp.file("repo/ck/step_3"));
  EXPECT_EQ(a.get<std::string>("out_dir"), tmp.file("cwd/o"));  // out_dir: always the CWD
  EXPECT_EQ(with_absolute_trainer_paths(a, "/elsewhere/c/y.yaml").to_yaml(), a.to_yaml());  // idempotent
  const Config cl = Config::load(path, schema(), {"data.root=mine", "resume=never"});
  const Config b = with_absolute_trainer_paths(cl, path);
  EXPECT_EQ(b.get<std::string>("data.root"), tmp.file("cwd/mine"));
  EXPECT_EQ(b.get<std::string>("resume"), "never");  // a word, not a path
  // A config parsed from text (no file): relative to the CWD.
  const Config t = Config::parse("data: {root: rel}\n", schema());
  EXPECT_EQ(with_absolute_trainer_paths(t, "").get<std::string>("data.root"), tmp.file("cwd/rel"));
}

// Sets an environment variable for one scope (unset when `value` is null).
class EnvGuard {
 public:
  EnvGuard(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old) old_ = old, had_ = true;
    if (value) setenv(name, value, 1); else unsetenv(name);
  }
  ~EnvGuard() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1); else unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

TEST(ConfigPaths, DataRootIsLookedUpAsGivenThenVtDataDirThenDataThenShared) {
  vt_test::TmpDir tmp;
  fs::create_directories(tmp.file("repo/configs"));
  fs::create_directories(tmp.file("cwd"));
  const std::string path = tmp.write("repo/configs/x.yaml", "data: {root: set1/part}\n");
  vt_test::ChdirGuard cd(tmp.file("cwd"));
  EnvGuard env("VT_DATA_DIR", tmp.file("env").c_str());
  const Config c = Config::load(path, schema());
  const std::vector<std::string> want{tmp.file("repo/set1/part"), tmp.file("env/set1/part"),
                                      tmp.file("repo/data/set1/part"), tmp.file("shared/data/set1/part")};
  EXPECT_EQ(data_root_candidates(c, "data.root", path), want);
  // Nothing exists: the value as given, and the message lists all four.
  EXPECT_EQ(resolve_data_root(c, "data.root", path), want[0]);
  const std::string msg = missing_data_root_message(c, "data.root", path);
  EXPECT_TRUE(contains(msg, "data.root 'set1/part' (" + path + ":1) does not exist or is not a directory; looked in: " +
                                want[0] + ", " + want[1] + ", " + want[2] + ", " + want[3] + "."))
      << msg;
  EXPECT_TRUE(contains(msg, ". Set VT_DATA_DIR to a folder that holds set1/part/ (VT_DATA_DIR is '" + tmp.file("env") + "')"))
      << msg;
  EXPECT_FALSE(contains(msg, "get_data.sh")) << msg;  // only for a dataset the script knows
  // Each place wins over the ones after it; a file of that name does not count.
  for (int i = 3; i >= 0; --i) {
    fs::create_directories(fs::path(want[i]).parent_path());
    std::ofstream(want[i]) << "not a folder";
    EXPECT_EQ(resolve_data_root(c, "data.root", path), i == 3 ? want[0] : want[i + 1]) << i;
    fs::remove(want[i]);
    fs::create_directories(want[i]);
    EXPECT_EQ(resolve_data_root(c, "data.root", path), want[i]) << i;
    EXPECT_EQ(with_absolute_trainer_paths(c, path).get<std::string>("data.root"), want[i]) << i;
  }
  // A command-line value: as given (the CWD), then VT_DATA_DIR only.
  const Config cl = Config::load(path, schema(), {"data.root=set1/part"});
  EXPECT_EQ(data_root_candidates(cl, "data.root", path),
            (std::vector<std::string>{"set1/part", tmp.file("env/set1/part")}));
  EXPECT_EQ(resolve_data_root(cl, "data.root", path), tmp.file("env/set1/part"));
  // An absolute value is only itself.
  const Config ab = Config::load(path, schema(), {"data.root=" + tmp.file("abs")});
  EXPECT_EQ(data_root_candidates(ab, "data.root", path), (std::vector<std::string>{tmp.file("abs")}));
}

TEST(ConfigPaths, MissingCifar10SaysHowToGetIt) {
  vt_test::TmpDir tmp;
  fs::create_directories(tmp.file("repo/configs"));
  fs::create_directories(tmp.file("repo/scripts"));
  tmp.write("repo/scripts/get_data.sh", "#!/bin/sh\n");
  const std::string path = tmp.write("repo/configs/x.yaml", "data: {root: cifar10/train}\n");
  EnvGuard env("VT_DATA_DIR", nullptr);
  const Config c = Config::load(path, schema());
  EXPECT_EQ(data_root_candidates(c, "data.root", path).size(), 3u);  // no VT_DATA_DIR
  const std::string msg = missing_data_root_message(c, "data.root", path);
  EXPECT_TRUE(contains(msg, "To get CIFAR-10, run `" + tmp.file("repo/scripts/get_data.sh") +
                                " cifar10` (downloads the official release into " + tmp.file("repo/data/cifar10") +
                                ", where this config finds it)"))
      << msg;
  EXPECT_TRUE(contains(msg, "(VT_DATA_DIR is unset)")) << msg;
  EXPECT_TRUE(contains(msg, "or give data.root=DIR.")) << msg;
}

// An absolute folder that does not exist: no lookup, no download hint, and
// the one remedy left reads as a sentence (not a dangling "or ...").
TEST(ConfigPaths, MissingAbsoluteRootSaysWhatToGive) {
  vt_test::TmpDir tmp;
  const std::string root = tmp.file("nosuch");
  const std::string path = tmp.write("x.yaml", "data: {root: " + root + "}\n");
  const Config c = Config::load(path, schema());
  const std::string msg = missing_data_root_message(c, "data.root", path);
  EXPECT_TRUE(contains(msg, "data.root '" + root + "' (" + path + ":1) does not exist or is not a directory. Give "
                            "data.root=DIR.")) << msg;
  EXPECT_FALSE(contains(msg, ". or")) << msg;
  EXPECT_FALSE(contains(msg, "VT_DATA_DIR")) << msg;
}

TEST(ConfigChecks, RangeChecksNameKeyAndSource) {
  const Config c = Config::parse("train: {lr: .inf, batch_size: 0}\nname: a/b\n", schema(), {}, "t.yaml");
  const std::string lr = vt_test::error_of([&] { real_in(c, "train.lr", 0, 1, /*open_lo=*/true); });
  EXPECT_TRUE(contains(lr, "train.lr (t.yaml:1)")) << lr;
  EXPECT_TRUE(contains(lr, "must be a finite number in (0, 1]")) << lr;
  const std::string bs = vt_test::error_of([&] { int_in(c, "train.batch_size", 1); });
  EXPECT_TRUE(contains(bs, "train.batch_size")) << bs;
  EXPECT_TRUE(contains(bs, "got 0")) << bs;
  EXPECT_EQ(int_in(Config::parse("", schema()), "train.batch_size", 1, 8), 8);
  EXPECT_THROW(run_name(c), ConfigError);
  EXPECT_EQ(run_name(Config::parse("name: ok-1.x\n", schema())), "ok-1.x");
}

TEST(ConfigSchema, RenamedKeysNameTheNewKey) {
  const std::string m = vt_test::error_of([] {
    Config::parse("train: {global_batch: 64}\n", schema(), {"log.every=5"}, "t.yaml");
  });
  EXPECT_TRUE(contains(m, "'train.global_batch' was renamed to 'train.batch_size'")) << m;
  EXPECT_TRUE(contains(m, "'log.every' was renamed to 'log.every_steps'")) << m;
  EXPECT_TRUE(contains(m, "t.yaml:1")) << m;
  // A renamed key cannot also be a key of the schema.
  ConfigSchema s = schema();
  EXPECT_THROW(s.renamed("train.lr", "train.batch_size"), std::logic_error);
  EXPECT_THROW(s.renamed("train.old", "train.nope"), std::logic_error);
}

TEST(RunControl, DigestIgnoresRunControlKeysOnly) {
  const Config a = Config::parse("resume: never\ntrain: {lr: 1e-3}\n", schema());
  const Config b = Config::parse("resume: auto\nthreads: 2\ntrain: {lr: 1e-3, max_steps: 60}\n"
                                 "log: {every_steps: 1}\nckpt: {every_steps: 5}\ndata: {workers: 7}\n",
                                 schema());
  EXPECT_NE(a.digest_hex(), b.digest_hex());    // the whole config differs
  EXPECT_EQ(resume_digest(a), resume_digest(b));  // what it computes does not
  const Config c = Config::parse("resume: never\ntrain: {lr: 2e-3}\n", schema());
  EXPECT_NE(resume_digest(a), resume_digest(c));
  const Config d = Config::parse("resume: never\ntrain: {lr: 1e-3, batch_size: 16}\n", schema());
  EXPECT_NE(resume_digest(a), resume_digest(d));
  // Excluding keys does not change the config itself.
  EXPECT_EQ(b.get<int64_t>("train.max_steps"), 60);
  EXPECT_EQ(b.get<std::string>("resume"), "auto");
  // The digest of nothing excluded is the plain digest.
  EXPECT_EQ(a.digest_hex(std::vector<std::string>{}), a.digest_hex());
}
