// Shared by the libFuzzer targets: a scratch file per process for readers
// that take a path, and a crash that says which property failed.
#pragma once
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace vt_fuzz {

// $TMPDIR/vt_fuzz_<pid>_<name>, removed at exit. One process runs one input
// at a time, so one file per name suffices.
inline std::string scratch_path(const std::string& name) {
  struct Remover {
    std::vector<std::string> paths;
    ~Remover() {
      for (const std::string& p : paths) std::remove(p.c_str());
    }
  };
  static Remover remover;  // libFuzzer ends with exit(), which runs it
  const char* base = std::getenv("TMPDIR");
  remover.paths.push_back(std::string(base && *base ? base : "/tmp") + "/vt_fuzz_" + std::to_string(getpid()) + "_" +
                          name);
  return remover.paths.back();
}

inline void write_scratch(const std::string& path, const void* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!f) {
    std::fprintf(stderr, "fuzz: cannot write scratch file %s\n", path.c_str());
    std::abort();
  }
}

// A property of the code under test does not hold: libFuzzer saves the input.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz: property violated: %s\n", what.c_str());
  std::abort();
}

}  // namespace vt_fuzz
