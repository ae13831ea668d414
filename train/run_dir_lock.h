// One writer per run directory: an exclusive lock on <run>/.lock
// (core/file_lock.h), held for as long as the RunDirLock lives and released
// by the OS however the process ends, so a crashed run never leaves a stale
// lock behind.
#pragma once
#include <string>

#include "core/file_lock.h"

namespace vt {

class RunDirLock {
 public:
  RunDirLock() = default;
  // Locks `dir` (which must exist). Throws std::runtime_error naming the
  // directory and the holder when another process (or another RunDirLock
  // of this one) holds it, or naming the lock file when it cannot be created.
  explicit RunDirLock(const std::string& dir);

  bool held() const { return lock_.held(); }
  void release() { lock_.release(); }

 private:
  FileLock lock_;
};

}  // namespace vt
