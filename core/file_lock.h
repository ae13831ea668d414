// An exclusive flock(2) on a lock file, held for as long as the FileLock
// lives: one writer at a time for a run directory (train/run_dir_lock.h) or
// a named output (core/output_claim.h). The OS releases it when the process
// ends, however it ends (SIGKILL, OOM kill, a node reboot on a local disk),
// so a crashed writer never leaves a stale lock behind. The file holds the
// holder's "pid <pid> on <host> since <UTC time>" for the refusal message;
// it is never removed (removing it would race a new holder).
#pragma once
#include <stdexcept>
#include <string>

namespace vt {

// Another process (or another FileLock of this one) holds the lock.
class FileLockBusy : public std::runtime_error {
 public:
  FileLockBusy(const std::string& path, const std::string& holder)
      : std::runtime_error("'" + path + "' is locked by " + holder), holder_(holder) {}
  // "pid 123 on host since 2026-01-02 03:04:05 UTC", or a phrase when the
  // holder has not recorded itself yet.
  const std::string& holder() const { return holder_; }

 private:
  std::string holder_;
};

class FileLock {
 public:
  FileLock() = default;
  // Creates `path` when absent (its directory must exist) and locks it.
  // Throws FileLockBusy when it is held, std::runtime_error naming the file
  // when it cannot be created or locked.
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(FileLock&& o) noexcept;
  FileLock& operator=(FileLock&& o) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  bool held() const { return fd_ >= 0; }
  void release();

 private:
  int fd_ = -1;
};

}  // namespace vt
