// Crash-safe file replacement for checkpoints, safetensors and npz files.
//
// A write goes to "<path>.tmp.<pid>" in the same directory (so the final
// rename never crosses file systems), is flushed and fsync'ed, renamed over
// <path>, and the directory is fsync'ed so the rename itself is durable. A
// reader therefore sees either the old file or the complete new one, never a
// torn write. Errors throw std::runtime_error naming the path and errno text;
// the temporary file is removed on failure.
#pragma once
#include <cstddef>
#include <cstdio>
#include <string>

namespace vt {

// Streaming variant: open, write() any number of times, commit(). Destroying
// an uncommitted writer removes the temporary file and leaves <path> as it was.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t bytes);
  void write(const std::string& s) { write(s.data(), s.size()); }
  // fflush + fsync + rename + fsync(directory). Call once.
  void commit();

  const std::string& path() const { return path_; }
  const std::string& temp_path() const { return tmp_; }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  bool committed_ = false;
};

void write_file_atomic(const std::string& path, const void* data, size_t bytes);
inline void write_file_atomic(const std::string& path, const std::string& bytes) {
  write_file_atomic(path, bytes.data(), bytes.size());
}

// "<path>.tmp.<pid>": the temporary name used above, for writers (libzip)
// that must produce the file themselves before commit_file_atomic().
std::string atomic_temp_path(const std::string& path);
// fsync(tmp), rename(tmp, path), fsync(directory of path); removes tmp and
// throws on failure.
void commit_file_atomic(const std::string& tmp, const std::string& path);

// Whole file into memory; throws std::runtime_error naming the path.
std::string read_file(const std::string& path);

}  // namespace vt
