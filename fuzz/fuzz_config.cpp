// Config loading (core/config.h) with each trainer's schema, on arbitrary
// YAML text. Every problem must be a ConfigError (a yaml-cpp exception or
// anything else escaping is a finding); an accepted config must read back
// from its to_yaml() as the same config (same digest), as config.h promises.
// _base_ paths resolve against configs/, so the committed configs seed it.
#include <cstdint>
#include <string>

#include "core/config.h"
#include "diffusion/dit_train_config.h"
#include "fuzz/fuzz_util.h"
#include "vision/train_config.h"

namespace {

void check(const std::string& text, const vt::ConfigSchema& schema, const char* program) {
  vt::Config c;
  try {
    c = vt::Config::parse(text, schema, {}, "fuzz.yaml", VT_CONFIGS_DIR);
  } catch (const vt::ConfigError&) {
    return;
  }
  const std::string yaml = c.to_yaml();
  vt::Config back;
  try {
    back = vt::Config::parse(yaml, schema, {}, "resolved.yaml", VT_CONFIGS_DIR);
  } catch (const vt::ConfigError& e) {
    vt_fuzz::fail(std::string(program) + ": to_yaml() does not load again: " + e.what() + "\n" + yaml);
  }
  if (back.digest() != c.digest())
    vt_fuzz::fail(std::string(program) + ": to_yaml() loads as a different config:\n" + yaml + "\n---\n" +
                  back.to_yaml());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  check(text, vt::vtrain_schema(), "vtrain");
  check(text, vt::dittrain_schema(), "dittrain");
  return 0;
}
