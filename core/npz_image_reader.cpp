#include "core/npz_image_reader.h"

#include <zip.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core/npz.h"

namespace vt {

struct NpzImageReader::Zip {
  zip_t* archive = nullptr;
  zip_file_t* file = nullptr;
  bool seekable = false;  // a stored member: zip_fseek works
  bool seeked = false;
  ~Zip() {
    if (file) zip_fclose(file);
    if (archive) zip_discard(archive);
  }
};

std::string NpzImageReader::where() const { return "'" + path_ + "': " + key_; }

NpzImageReader::NpzImageReader(const std::string& path, const std::string& key)
    : zip_(std::make_unique<Zip>()), path_(path), key_(key) {
  int err = 0;
  zip_->archive = zip_open(path.c_str(), ZIP_RDONLY, &err);
  if (!zip_->archive) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    const std::string msg = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    throw std::runtime_error("'" + path + "': cannot open as an .npz (zip archive) to read " + key + ": " + msg);
  }
  const std::string member = key + ".npy";
  const zip_int64_t idx = zip_name_locate(zip_->archive, member.c_str(), 0);
  if (idx < 0) {
    std::string present;
    const zip_int64_t n = zip_get_num_entries(zip_->archive, 0);
    for (zip_int64_t i = 0; i < n; ++i)
      if (const char* name = zip_get_name(zip_->archive, static_cast<zip_uint64_t>(i), 0))
        present += (present.empty() ? "" : ", ") + std::string(name);
    throw std::runtime_error("'" + path + "': no key '" + key + "' (members: " + (present.empty() ? "none" : present) +
                             ")");
  }
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(zip_->archive, static_cast<zip_uint64_t>(idx), 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE))
    throw std::runtime_error(where() + ": cannot stat the member: " + zip_strerror(zip_->archive));
  zip_->seekable = (st.valid & ZIP_STAT_COMP_METHOD) && st.comp_method == ZIP_CM_STORE;
  zip_->file = zip_fopen_index(zip_->archive, static_cast<zip_uint64_t>(idx), 0);
  if (!zip_->file) throw std::runtime_error(where() + ": cannot open the member: " + zip_strerror(zip_->archive));

  // The preamble first, for the header's length; then the header itself.
  const std::string what = path + ":" + member;
  std::string head(12, '\0');
  const uint64_t pre = std::min<uint64_t>(12, st.size);
  read_exact(head.data(), pre, "npy preamble");
  head.resize(pre);
  const size_t hsize = npy_header_size(head.data(), head.size(), what);
  if (hsize > st.size)
    throw std::runtime_error(where() + ": npy header of " + std::to_string(hsize) + " bytes in a member of " +
                             std::to_string(st.size) + " (truncated)");
  head.resize(hsize);
  if (hsize > pre) read_exact(head.data() + pre, hsize - pre, "npy header");
  const NpyHeader h = parse_npy_header(head.data(), head.size(), what);
  if (h.dtype != "|u1" || h.shape.size() != 4 || h.shape[3] != 3)
    throw std::runtime_error(where() + " has dtype " + h.dtype + " and shape " + shape_str(h.shape) +
                             "; expected uint8 [N, H, W, 3]");
  if (h.data_offset + h.data_bytes != st.size)
    throw std::runtime_error(where() + ": shape " + shape_str(h.shape) + " needs " + std::to_string(h.data_bytes) +
                             " data bytes, the member holds " + std::to_string(st.size - h.data_offset) +
                             " (truncated or damaged)");
  n_ = h.shape[0], h_ = h.shape[1], w_ = h.shape[2];
  data_offset_ = h.data_offset;
}

NpzImageReader::~NpzImageReader() = default;

void NpzImageReader::read_exact(void* dst, uint64_t bytes, const char* what) {
  auto* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const zip_int64_t got = zip_fread(zip_->file, p, bytes);
    if (got < 0)
      throw std::runtime_error(where() + ": reading the " + what + " failed (truncated or damaged file): " +
                               zip_error_strerror(zip_file_get_error(zip_->file)));
    if (got == 0) throw std::runtime_error(where() + ": the " + what + " ends early (truncated file)");
    p += got;
    bytes -= static_cast<uint64_t>(got);
  }
}

int64_t NpzImageReader::read(uint8_t* dst, int64_t max_rows) {
  const int64_t n = std::max<int64_t>(0, std::min(max_rows, n_ - pos_));
  if (n > 0) read_exact(dst, static_cast<uint64_t>(n) * row_bytes(), "image data");
  pos_ += n;
  // libzip compares the CRC-32 on the read that meets the end of the member:
  // one more read makes a damaged last batch an error, not silent pixels.
  // (After a seek there is no CRC to compare: a rank that skipped rows.)
  if (n > 0 && pos_ == n_ && !zip_->seeked) {
    char extra;
    const zip_int64_t got = zip_fread(zip_->file, &extra, 1);
    if (got < 0)
      throw std::runtime_error(where() + ": the image data fail the member's CRC check (damaged file): " +
                               zip_error_strerror(zip_file_get_error(zip_->file)));
    if (got > 0) throw std::runtime_error(where() + ": the member holds more bytes than its shape");
  }
  return n;
}

const std::vector<uint8_t>& NpzImageReader::read_batch(int64_t max_rows, int64_t* got) {
  const int64_t n = std::max<int64_t>(0, std::min(max_rows, n_ - pos_));
  batch_.resize(static_cast<size_t>(n) * row_bytes());
  *got = read(batch_.data(), n);
  return batch_;
}

void NpzImageReader::skip_to(int64_t row) {
  if (row < pos_ || row > n_)
    throw std::invalid_argument(where() + ": skip_to(" + std::to_string(row) + ") outside [" + std::to_string(pos_) +
                                ", " + std::to_string(n_) + "]");
  if (row == pos_) return;
  if (zip_->seekable &&
      zip_fseek(zip_->file, static_cast<zip_int64_t>(data_offset_ + static_cast<uint64_t>(row) * row_bytes()), SEEK_SET) == 0) {
    zip_->seeked = true;
    pos_ = row;
    return;
  }
  // Deflated: inflate and drop, a bounded buffer at a time.
  std::vector<uint8_t> scratch(std::min<size_t>(row_bytes() * static_cast<size_t>(row - pos_), size_t{1} << 24));
  uint64_t left = static_cast<uint64_t>(row - pos_) * row_bytes();
  while (left > 0) {
    const uint64_t step = std::min<uint64_t>(left, scratch.size());
    read_exact(scratch.data(), step, "image data");
    left -= step;
  }
  pos_ = row;
}

}  // namespace vt
