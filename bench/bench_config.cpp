// Config parsing speed with the trainer schemas (core/config.h): the best
// time of one Config::load of each file (accepted or not) with
// vtrain_schema() and dittrain_schema(), plus one Config::parse of a short
// text; one JSON line each. With --digests it instead prints, per file and
// schema, the digest_hex() of the loaded config (--yaml: and its to_yaml())
// or the error message, so that two builds can be compared line by line
// (checkpoints store the digest; it must not change).
//
//   build/bench/bench_config [--digests | --yaml] configs/*.yaml
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "core/config.h"
#include "diffusion/dit_train_config.h"
#include "vision/train_config.h"

namespace {

struct Named {
  const char* name;
  const vt::ConfigSchema& schema;
};

std::string outcome(const std::string& path, const vt::ConfigSchema& schema, bool yaml) {
  try {
    const vt::Config c = vt::Config::load(path, schema);
    return c.digest_hex() + " " + std::to_string(c.to_yaml().size()) + " bytes" + (yaml ? "\n" + c.to_yaml() : "");
  } catch (const vt::ConfigError& e) {
    return std::string("error: ") + e.what();
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool digests = false, yaml = false;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--digests") == 0) digests = true;
    else if (std::strcmp(argv[i], "--yaml") == 0) digests = yaml = true;
    else files.push_back(argv[i]);
  }
  const Named schemas[] = {{"vtrain", vt::vtrain_schema()}, {"dittrain", vt::dittrain_schema()}};
  for (const auto& f : files)
    for (const auto& s : schemas) {
      if (digests) {
        std::printf("%s %s: %s\n", f.c_str(), s.name, outcome(f, s.schema, yaml).c_str());
        continue;
      }
      const double t = vt_bench::best_seconds(
          [&] {
            try {
              (void)vt::Config::load(f, s.schema);
            } catch (const vt::ConfigError&) {
            }
          },
          0.5);
      std::printf("{\"file\": \"%s\", \"schema\": \"%s\", \"load_ms\": %.3f}\n", f.c_str(), s.name, t * 1e3);
    }
  if (!digests) {
    const std::string text = "model:\n  depth: 2\ntrain:\n  lr: 1e-3\n";
    for (const auto& s : schemas) {
      const double t = vt_bench::best_seconds(
          [&] {
            try {
              (void)vt::Config::parse(text, s.schema);
            } catch (const vt::ConfigError&) {
            }
          },
          0.5);
      std::printf("{\"file\": \"<4-line text>\", \"schema\": \"%s\", \"parse_ms\": %.3f}\n", s.name, t * 1e3);
    }
  }
  return 0;
}
