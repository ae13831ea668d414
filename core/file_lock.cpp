#include "core/file_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

namespace vt {

namespace {

std::string holder_text() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "?");
  char when[32] = "?";
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  if (gmtime_r(&now, &tm)) std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return "pid " + std::to_string(getpid()) + " on " + host + " since " + when;
}

std::string read_all(int fd) {
  std::string out;
  char buf[256];
  ssize_t n;
  if (lseek(fd, 0, SEEK_SET) < 0) return out;
  while ((n = read(fd, buf, sizeof buf)) > 0 && out.size() < 4096) out.append(buf, static_cast<size_t>(n));
  while (!out.empty() && (out.back() == '\n' || out.back() == '\0')) out.pop_back();
  return out;
}

}  // namespace

FileLock::FileLock(const std::string& path) {
  // Not truncated on open: a second process must still read the holder.
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error("cannot create the lock file '" + path + "': " + std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    std::string holder = read_all(fd);
    close(fd);
    if (err != EWOULDBLOCK) throw std::runtime_error("cannot lock '" + path + "': " + std::strerror(err));
    if (holder.empty()) holder = "a process that has not yet recorded itself";
    throw FileLockBusy(path, holder);
  }
  // The lock holds even if this fails; only a refused writer's message would lack the holder.
  const std::string me = holder_text() + "\n";
  if (ftruncate(fd, 0) == 0) (void)!pwrite(fd, me.data(), me.size(), 0);
  fd_ = fd;
}

FileLock::~FileLock() { release(); }

FileLock::FileLock(FileLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }

FileLock& FileLock::operator=(FileLock&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

void FileLock::release() {
  if (fd_ < 0) return;
  close(fd_);  // drops the flock; the file stays
  fd_ = -1;
}

}  // namespace vt
