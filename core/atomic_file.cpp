#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace vt {

static std::runtime_error io_error(const std::string& what, const std::string& path) {
  return std::runtime_error(what + " '" + path + "': " + std::strerror(errno));
}

static std::string parent_dir(const std::string& path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

static void fsync_path(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), directory ? (O_RDONLY | O_DIRECTORY) : O_RDONLY);
  if (fd < 0) throw io_error("cannot open for fsync", path);
  // Some file systems (e.g. certain network mounts) refuse fsync on a
  // directory with EINVAL; the rename has still happened, so only a real I/O
  // error counts.
  if (::fsync(fd) != 0 && !(directory && (errno == EINVAL || errno == EROFS))) {
    int e = errno;
    ::close(fd);
    errno = e;
    throw io_error("fsync failed for", path);
  }
  ::close(fd);
}

std::string atomic_temp_path(const std::string& path) {
  return path + ".tmp." + std::to_string(static_cast<long>(::getpid()));
}

void commit_file_atomic(const std::string& tmp, const std::string& path) {
  try {
    fsync_path(tmp, false);
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw io_error("cannot rename '" + tmp + "' to", path);
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
  fsync_path(parent_dir(path), true);
}

AtomicFileWriter::AtomicFileWriter(const std::string& path) : path_(path), tmp_(atomic_temp_path(path)) {
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) throw io_error("cannot create temporary file", tmp_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (f_) std::fclose(f_);
  if (!committed_) std::remove(tmp_.c_str());
}

void AtomicFileWriter::write(const void* data, size_t bytes) {
  if (!f_) throw std::runtime_error("AtomicFileWriter: write after commit to '" + path_ + "'");
  if (bytes && std::fwrite(data, 1, bytes, f_) != bytes) throw io_error("write failed for", tmp_);
}

void AtomicFileWriter::commit() {
  if (!f_) throw std::runtime_error("AtomicFileWriter: commit called twice for '" + path_ + "'");
  bool ok = std::fflush(f_) == 0;
  int e = errno;
  ok = (std::fclose(f_) == 0) && ok;
  f_ = nullptr;
  if (!ok) {
    errno = e;
    throw io_error("flush failed for", tmp_);
  }
  commit_file_atomic(tmp_, path_);
  committed_ = true;
}

void write_file_atomic(const std::string& path, const void* data, size_t bytes) {
  AtomicFileWriter w(path);
  w.write(data, bytes);
  w.commit();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw io_error("cannot open", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw io_error("read failed for", path);
  return ss.str();
}

}  // namespace vt
