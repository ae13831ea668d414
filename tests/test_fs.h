// Filesystem helpers shared by every test binary: a fresh directory under
// $TMPDIR (or /tmp) per test, removed afterwards; a scoped working-directory
// change; the message of an expected exception.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace vt_test {

class TmpDir {
 public:
  TmpDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base ? base : "/tmp") + "/vt_test_XXXXXX";
    if (!mkdtemp(&tmpl[0])) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  std::string write(const std::string& name, const std::string& bytes) const {
    std::ofstream(file(name), std::ios::binary) << bytes;
    return file(name);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Changes the working directory and restores it when it goes out of scope.
class ChdirGuard {
 public:
  explicit ChdirGuard(const std::filesystem::path& to) : old_(std::filesystem::current_path()) {
    std::filesystem::current_path(to);
  }
  ~ChdirGuard() { std::filesystem::current_path(old_); }

 private:
  std::filesystem::path old_;
};

// The whole file as text ("" when it cannot be read).
inline std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

// Runs fn and returns the message of the exception it throws ("" if none).
template <typename F>
std::string error_of(F&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace vt_test
