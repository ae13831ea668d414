// Streams the images of an ADM-style sample batch (.npz member "arr_0",
// uint8 [N, H, W, 3], C order) a batch of rows at a time, so that memory
// holds one batch, not N images (50 000 x 256 x 256 x 3 is 9.8 GB).
//
// Follows ADM's evaluator (openai/guided-diffusion evaluations/evaluator.py:
// open_npz_array / StreamingNpzArrayReader): the member is opened inside the
// zip, its npy header read (versions 1.0, 2.0, 3.0; core/npz.h's parser), and
// the data read sequentially, read_batch(batch) rows at a time. Stored
// (np.savez) and deflated (np.savez_compressed) members both stream; libzip
// inflates on the fly and checks the CRC at the end of the member.
//
// Errors: std::runtime_error naming the file and the key ("'f.npz': arr_0
// ..."): not a zip archive, no such member (listing the keys present), a
// bad npy header, a dtype other than uint8 or a shape other than
// [N, H, W, 3], a member whose size disagrees with the header, data that
// end early or fail the CRC (a truncated or damaged file).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace vt {

class NpzImageReader {
 public:
  explicit NpzImageReader(const std::string& path, const std::string& key = "arr_0");
  ~NpzImageReader();
  NpzImageReader(const NpzImageReader&) = delete;
  NpzImageReader& operator=(const NpzImageReader&) = delete;

  int64_t rows() const { return n_; }     // N
  int64_t height() const { return h_; }   // H
  int64_t width() const { return w_; }    // W
  size_t row_bytes() const { return static_cast<size_t>(h_ * w_ * 3); }
  int64_t position() const { return pos_; }  // rows handed out or skipped so far

  // Copies the next min(max_rows, rows() - position()) rows into dst
  // (row_bytes() each) and returns how many; 0 at the end.
  int64_t read(uint8_t* dst, int64_t max_rows);
  // The next min(max_rows, ...) rows in an internal buffer (valid until the
  // next call); empty at the end. As ADM's read_batch.
  const std::vector<uint8_t>& read_batch(int64_t max_rows, int64_t* got);
  // Moves forward to row `row` (>= position()): a seek in a stored member,
  // reading and dropping the rows in a deflated one (each rank of a sharded
  // pass starts at its own first row).
  void skip_to(int64_t row);

  const std::string& path() const { return path_; }
  const std::string& key() const { return key_; }

 private:
  void read_exact(void* dst, uint64_t bytes, const char* what);
  std::string where() const;  // "'<path>': <key>"

  struct Zip;
  std::unique_ptr<Zip> zip_;
  std::string path_, key_;
  int64_t n_ = 0, h_ = 0, w_ = 0, pos_ = 0;
  uint64_t data_offset_ = 0;
  std::vector<uint8_t> batch_;
};

}  // namespace vt
