#include "core/npz_stream_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "core/atomic_file.h"

namespace vt {
namespace {

constexpr uint64_t kNoZip64 = 0xFFFFFFFFull;  // sizes and offsets from here on live in ZIP64 fields
// MS-DOS time and date of 1980-01-01 00:00 (core/npz.cpp's save_npz uses the same).
constexpr uint16_t kDosTime = 0, kDosDate = (0 << 9) | (1 << 5) | 1;

void le16(std::string* s, uint64_t v) {
  for (int i = 0; i < 2; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void le32(std::string* s, uint64_t v) {
  for (int i = 0; i < 4; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void le64(std::string* s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

const uint32_t* crc_table() {
  static const auto table = [] {
    static uint32_t t[256];
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  return table;
}

}  // namespace

uint32_t crc32_update(uint32_t crc, const void* data, size_t bytes) {
  const uint32_t* t = crc_table();
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  for (size_t i = 0; i < bytes; ++i) c = t[(c ^ p[i]) & 0xff] ^ (c >> 8);
  return ~c;
}

NpzStreamWriter::NpzStreamWriter(const std::string& path, const std::string& work_path)
    : NpzStreamWriter(path, work_path, false) {}

NpzStreamWriter::NpzStreamWriter(const std::string& path, const std::string& work_path, bool open_existing)
    : path_(path), work_(work_path.empty() ? atomic_temp_path(path) : work_path) {
  f_ = std::fopen(work_.c_str(), open_existing ? "r+b" : "wb");
  if (!f_) throw std::runtime_error("npz '" + path_ + "': cannot open '" + work_ + "': " + std::strerror(errno));
}

NpzStreamWriter::~NpzStreamWriter() {
  if (f_) std::fclose(f_);
  if (!committed_ && !keep_) std::remove(work_.c_str());
}

void NpzStreamWriter::fail(const std::string& msg) const {
  throw std::runtime_error("npz '" + path_ + "' (writing '" + work_ + "'): " + msg);
}

void NpzStreamWriter::put(const void* data, size_t bytes) {
  if (bytes && std::fwrite(data, 1, bytes, f_) != bytes) fail(std::string("write failed: ") + std::strerror(errno));
  at_ += bytes;
}

std::string NpzStreamWriter::local_header(const std::string& name, uint64_t size, uint32_t crc) const {
  const bool z64 = size >= kNoZip64;
  std::string h;
  le32(&h, 0x04034b50);
  le16(&h, z64 ? 45 : 20);  // version needed: 4.5 for ZIP64
  le16(&h, 0);              // flags
  le16(&h, 0);              // stored
  le16(&h, kDosTime);
  le16(&h, kDosDate);
  le32(&h, crc);
  le32(&h, z64 ? kNoZip64 : size);  // compressed size
  le32(&h, z64 ? kNoZip64 : size);  // uncompressed size
  le16(&h, name.size());
  le16(&h, z64 ? 20 : 0);
  h += name;
  if (z64) {
    le16(&h, 0x0001);
    le16(&h, 16);
    le64(&h, size);  // uncompressed
    le64(&h, size);  // compressed
  }
  return h;
}

void NpzStreamWriter::begin(const std::string& key, const std::string& dtype, const Shape& shape) {
  if (open_ || committed_) throw std::logic_error("NpzStreamWriter::begin: a member is open or the file committed");
  if (key.empty()) fail("empty array name");
  NpyArray probe;  // for the item size of dtype
  probe.dtype = dtype;
  const std::string npy = npy_header(dtype, shape);
  Member m;
  m.name = key + ".npy";
  m.offset = at_;
  m.size = npy.size() + static_cast<uint64_t>(shape_numel(shape)) * probe.itemsize();
  const std::string lh = local_header(m.name, m.size, 0);
  put(lh.data(), lh.size());
  put(npy.data(), npy.size());
  crc_state_ = crc32_update(0, npy.data(), npy.size());
  cur_size_ = m.size - npy.size();
  cur_written_ = 0;
  cur_data_ = at_;
  members_.push_back(m);
  open_ = true;
}

void NpzStreamWriter::write(const void* data, size_t bytes) {
  if (!open_) throw std::logic_error("NpzStreamWriter::write: no member open");
  if (cur_written_ + bytes > cur_size_)
    fail("member '" + members_.back().name + "' given " + std::to_string(cur_written_ + bytes) +
         " data bytes, its shape holds " + std::to_string(cur_size_));
  put(data, bytes);
  crc_state_ = crc32_update(crc_state_, data, bytes);
  cur_written_ += bytes;
}

void NpzStreamWriter::end() {
  if (!open_) throw std::logic_error("NpzStreamWriter::end: no member open");
  Member& m = members_.back();
  if (cur_written_ != cur_size_)
    fail("member '" + m.name + "' got " + std::to_string(cur_written_) + " data bytes, its shape needs " +
         std::to_string(cur_size_));
  m.crc = crc_state_;
  // The CRC-32 field of the local header (offset 14), now that it is known.
  std::string c;
  le32(&c, m.crc);
  if (fseeko(f_, static_cast<off_t>(m.offset + 14), SEEK_SET) != 0 || std::fwrite(c.data(), 1, 4, f_) != 4 ||
      fseeko(f_, static_cast<off_t>(at_), SEEK_SET) != 0)
    fail(std::string("patching the CRC failed: ") + std::strerror(errno));
  open_ = false;
}

void NpzStreamWriter::add(const std::string& key, const NpyArray& a) {
  const std::string npy = serialize_npy(a);
  const std::string npy_head = npy_header(a.dtype, a.shape);
  begin(key, a.dtype, a.shape);
  write(npy.data() + npy_head.size(), npy.size() - npy_head.size());
  end();
}

void NpzStreamWriter::sync() {
  if (std::fflush(f_) != 0 || ::fsync(fileno(f_)) != 0) fail(std::string("fsync failed: ") + std::strerror(errno));
}

void NpzStreamWriter::commit() {
  if (open_ || committed_) throw std::logic_error("NpzStreamWriter::commit: a member is open or already committed");
  const uint64_t cd_offset = at_;
  std::string cd;
  for (const Member& m : members_) {
    const bool zsize = m.size >= kNoZip64, zoff = m.offset >= kNoZip64;
    std::string extra;
    if (zsize || zoff) {
      std::string body;
      if (zsize) le64(&body, m.size), le64(&body, m.size);
      if (zoff) le64(&body, m.offset);
      le16(&extra, 0x0001);
      le16(&extra, body.size());
      extra += body;
    }
    const int version = zsize || zoff ? 45 : 20;
    le32(&cd, 0x02014b50);
    le16(&cd, version);  // made by (MS-DOS attributes)
    le16(&cd, version);  // needed
    le16(&cd, 0);
    le16(&cd, 0);
    le16(&cd, kDosTime);
    le16(&cd, kDosDate);
    le32(&cd, m.crc);
    le32(&cd, zsize ? kNoZip64 : m.size);
    le32(&cd, zsize ? kNoZip64 : m.size);
    le16(&cd, m.name.size());
    le16(&cd, extra.size());
    le16(&cd, 0);  // comment
    le16(&cd, 0);  // disk
    le16(&cd, 0);  // internal attributes
    le32(&cd, 0);  // external attributes
    le32(&cd, zoff ? kNoZip64 : m.offset);
    cd += m.name;
    cd += extra;
  }
  const uint64_t n = members_.size(), cd_size = cd.size();
  if (n >= 0xFFFF || cd_size >= kNoZip64 || cd_offset >= kNoZip64) {
    const uint64_t z64_offset = cd_offset + cd_size;
    le32(&cd, 0x06064b50);  // ZIP64 end of central directory record
    le64(&cd, 44);
    le16(&cd, 45);
    le16(&cd, 45);
    le32(&cd, 0);
    le32(&cd, 0);
    le64(&cd, n);
    le64(&cd, n);
    le64(&cd, cd_size);
    le64(&cd, cd_offset);
    le32(&cd, 0x07064b50);  // its locator
    le32(&cd, 0);
    le64(&cd, z64_offset);
    le32(&cd, 1);
  }
  le32(&cd, 0x06054b50);
  le16(&cd, 0);
  le16(&cd, 0);
  le16(&cd, n >= 0xFFFF ? 0xFFFF : n);
  le16(&cd, n >= 0xFFFF ? 0xFFFF : n);
  le32(&cd, cd_size >= kNoZip64 ? kNoZip64 : cd_size);
  le32(&cd, cd_offset >= kNoZip64 ? kNoZip64 : cd_offset);
  le16(&cd, 0);
  put(cd.data(), cd.size());
  if (std::fclose(f_) != 0) {
    f_ = nullptr;
    fail(std::string("close failed: ") + std::strerror(errno));
  }
  f_ = nullptr;
  commit_file_atomic(work_, path_);  // fsync, rename, fsync of the directory
  committed_ = true;
}

std::unique_ptr<NpzStreamWriter> NpzStreamWriter::resume(const std::string& path, const std::string& work_path,
                                                         const std::string& key, const std::string& dtype,
                                                         const Shape& shape, uint64_t keep) {
  std::unique_ptr<NpzStreamWriter> w(new NpzStreamWriter(path, work_path, true));
  // Kept whatever happens: it holds rows whose sources may be gone.
  w->keep_ = true;
  NpyArray probe;
  probe.dtype = dtype;
  const std::string npy = npy_header(dtype, shape);
  const uint64_t size = npy.size() + static_cast<uint64_t>(shape_numel(shape)) * probe.itemsize();
  const std::string want = w->local_header(key + ".npy", size, 0) + npy;
  std::string got(want.size(), '\0');
  if (std::fread(got.data(), 1, got.size(), w->f_) != got.size())
    w->fail("shorter than the headers of '" + key + "' it should begin with");
  std::memset(got.data() + 14, 0, 4);  // the CRC-32, patched only at the end
  if (got != want) w->fail("does not begin with the headers of '" + key + "' " + dtype + " " + shape_str(shape));
  if (keep > size - npy.size()) w->fail("asked to keep more data bytes than '" + key + "' holds");
  if (fseeko(w->f_, 0, SEEK_END) != 0) w->fail(std::string("seek failed: ") + std::strerror(errno));
  const uint64_t have = static_cast<uint64_t>(ftello(w->f_));
  if (have < want.size() + keep)
    w->fail("holds " + std::to_string(have - want.size()) + " data bytes of '" + key + "', expected at least " +
            std::to_string(keep));
  if (::ftruncate(fileno(w->f_), static_cast<off_t>(want.size() + keep)) != 0)
    w->fail(std::string("truncate failed: ") + std::strerror(errno));
  // The CRC of what is kept, read back in bounded pieces.
  if (fseeko(w->f_, static_cast<off_t>(want.size() - npy.size()), SEEK_SET) != 0)
    w->fail(std::string("seek failed: ") + std::strerror(errno));
  uint32_t crc = 0;
  std::vector<char> buf(size_t{1} << 22);
  for (uint64_t left = npy.size() + keep; left > 0;) {
    const size_t step = static_cast<size_t>(std::min<uint64_t>(left, buf.size()));
    if (std::fread(buf.data(), 1, step, w->f_) != step) w->fail("reading back the kept data failed");
    crc = crc32_update(crc, buf.data(), step);
    left -= step;
  }
  if (fseeko(w->f_, 0, SEEK_END) != 0) w->fail(std::string("seek failed: ") + std::strerror(errno));
  Member m;
  m.name = key + ".npy";
  m.offset = 0;
  m.size = size;
  w->members_.push_back(m);
  w->at_ = want.size() + keep;
  w->cur_size_ = size - npy.size();
  w->cur_written_ = keep;
  w->cur_data_ = want.size();
  w->crc_state_ = crc;
  w->open_ = true;
  return w;
}

}  // namespace vt
