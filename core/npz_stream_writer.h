// Writes an .npz whose members may be larger than memory: a member's npy
// header first, then its data in pieces (the rows of sample chunks, say),
// so that no whole array is ever held. np.load reads the result.
//
// Format: a zip archive of stored (uncompressed) "<key>.npy" members, as
// np.savez writes them, with ZIP64 extensions for members or offsets of
// 4 GiB and more (as Python's zipfile writes them for numpy: a 50 000 x 256
// x 256 x 3 arr_0 is 9.8 GB). Each member's local header is written with a
// zero CRC-32, patched once its data are complete. Members carry the fixed
// time 1980-01-01 00:00 (as core/npz.h's save_npz), so the same arrays give
// the same bytes.
//
// The archive is built in `work_path` and renamed over `path` by commit()
// (fsync of file and directory first: core/atomic_file.h), so `path` is
// either absent/old or complete. A writer destroyed before commit() removes
// the work file, unless keep_work_file() was called (a resumable assembly
// keeps it: resume() continues it).
//
// Errors: std::runtime_error naming the file (write or fsync failure, a
// member whose data are more or fewer bytes than its shape, a resumed work
// file whose start differs from the header this writer would write);
// std::logic_error for calls out of order.
#pragma once
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "core/npz.h"

namespace vt {

class NpzStreamWriter {
 public:
  // Creates (truncates) work_path; "" means atomic_temp_path(path).
  explicit NpzStreamWriter(const std::string& path, const std::string& work_path = "");
  ~NpzStreamWriter();
  NpzStreamWriter(const NpzStreamWriter&) = delete;
  NpzStreamWriter& operator=(const NpzStreamWriter&) = delete;

  // Continues the work file of an earlier writer whose first member was
  // begin(key, dtype, shape) and which had written at least `keep` data
  // bytes: checks the file starts with the same headers, cuts it to those
  // `keep` bytes (a copy cut short is dropped) and recomputes their CRC-32
  // by reading them back. The member is then open for write().
  static std::unique_ptr<NpzStreamWriter> resume(const std::string& path, const std::string& work_path, const std::string& key,
                                 const std::string& dtype, const Shape& shape, uint64_t keep);

  // A whole (small) member.
  void add(const std::string& key, const NpyArray& a);
  // A member of `shape` and `dtype` (numpy descr, e.g. "|u1") whose data
  // follow through write(); end() closes it.
  void begin(const std::string& key, const std::string& dtype, const Shape& shape);
  void write(const void* data, size_t bytes);
  void end();

  uint64_t data_written() const { return cur_written_; }  // of the open member
  uint64_t data_offset() const { return cur_data_; }      // file offset of its first data byte
  const std::string& work_path() const { return work_; }
  // fflush + fsync: what was written is on disk (before a source is removed).
  void sync();
  // Central directory, fsync, rename over path, fsync of the directory.
  void commit();
  void keep_work_file() { keep_ = true; }

 private:
  struct Member {
    std::string name;
    uint32_t crc = 0;
    uint64_t size = 0, offset = 0;
  };
  NpzStreamWriter(const std::string& path, const std::string& work_path, bool open_existing);
  std::string local_header(const std::string& name, uint64_t size, uint32_t crc) const;
  void put(const void* data, size_t bytes);
  [[noreturn]] void fail(const std::string& msg) const;

  std::string path_, work_;
  std::FILE* f_ = nullptr;
  uint64_t at_ = 0;  // bytes in the file
  std::vector<Member> members_;
  bool open_ = false, committed_ = false, keep_ = false;
  uint64_t cur_size_ = 0, cur_written_ = 0, cur_data_ = 0;
  uint32_t crc_state_ = 0;
};

// CRC-32 (zip, zlib: polynomial 0xEDB88320) of data, continuing from `crc`
// (0 to start).
uint32_t crc32_update(uint32_t crc, const void* data, size_t bytes);

}  // namespace vt
