// Helpers of the data-parallel emulator tests (dp_*_emu_test.cpp, run under
// mpirun): a folder every rank shares.
#pragma once

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "core/dist.h"

namespace vt_test {

// One folder for all ranks (rank 0 makes it, every rank gets its name):
// the ranks share the data and rank 0 writes the run there.
inline std::string shared_dir() {
  char path[512] = {0};
  if (vt::dist().is_root()) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/vt_dp_emu_XXXXXX";
    if (!mkdtemp(&tmpl[0])) throw std::runtime_error("mkdtemp failed");
    tmpl.copy(path, sizeof path - 1);
  }
  vt::dist().broadcast(path, sizeof path, 0);
  return path;
}

}  // namespace vt_test
