// Helpers of the emulator tests run under mpirun (dp_*_emu_test.cpp,
// nccl_emu_test.cpp): a folder every rank shares, and a GoogleTest main in
// which every rank runs every test and any rank's failure fails the job.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
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

// shared_dir() for the scope of a test: rank 0 removes it once every rank is done.
struct SharedDir {
  const std::string path = shared_dir();
  SharedDir() = default;
  SharedDir(const SharedDir&) = delete;
  SharedDir& operator=(const SharedDir&) = delete;
  ~SharedDir() {
    vt::dist().barrier();
    if (vt::dist().is_root()) std::filesystem::remove_all(path);
  }
};

// The body of main(): only rank 0 prints; every rank runs every collective;
// a failure on any rank fails the job.
inline int run_tests_on_every_rank(int argc, char** argv) {
  vt::DistSession session(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  if (!vt::dist().is_root()) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int64_t failed = RUN_ALL_TESTS() ? 1 : 0;
  vt::dist().allreduce_sum(&failed, 1);
  return failed ? 1 : 0;
}

}  // namespace vt_test
