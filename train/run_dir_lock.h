// One writer per run directory: an exclusive flock(2) on <run>/.lock, held
// for as long as the RunDirLock lives. The OS releases it when the process
// ends, however it ends (SIGKILL, OOM kill, a node reboot on a local disk),
// so a crashed run never leaves a stale lock behind. The file holds the
// holder's "pid <pid> on <host> since <UTC time>" for the refusal message.
#pragma once
#include <string>

namespace vt {

class RunDirLock {
 public:
  RunDirLock() = default;
  // Locks `dir` (which must exist). Throws std::runtime_error naming the
  // directory and the holder when another process (or another RunDirLock
  // of this one) holds it, or naming the lock file when it cannot be created.
  explicit RunDirLock(const std::string& dir);
  ~RunDirLock();
  RunDirLock(RunDirLock&& o) noexcept;
  RunDirLock& operator=(RunDirLock&& o) noexcept;
  RunDirLock(const RunDirLock&) = delete;
  RunDirLock& operator=(const RunDirLock&) = delete;

  bool held() const { return fd_ >= 0; }
  void release();

 private:
  int fd_ = -1;
};

}  // namespace vt
