// POSIX ustar (IEEE Std 1003.1-1988 "ustar" interchange format) headers, as
// far as WebDataset shards need them: regular files with short names.
//
// An archive is a sequence of 512-byte blocks: per member a header block,
// then the data padded with zeros to a multiple of 512; the archive ends with
// two zero blocks. Header fields (offset, length): name (0, 100), mode (100,
// 8), uid (108, 8), gid (116, 8), size (124, 12), mtime (136, 12), chksum
// (148, 8), typeflag (156, 1), linkname (157, 100), magic (257, 6) =
// "ustar\0", version (263, 2) = "00", uname, gname, devmajor, devminor,
// prefix (345, 155). Numbers are octal ASCII, NUL-terminated. chksum is the
// sum of the header's 512 bytes as unsigned values with the chksum field
// taken as 8 spaces. This is what Python's tarfile (format=USTAR_FORMAT)
// writes and what the webdataset library and DALI's webdataset reader read.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace vt {

constexpr size_t kTarBlock = 512;

// Bytes a member of `size` data bytes occupies: header + padded data.
inline uint64_t tar_member_bytes(uint64_t size) { return kTarBlock + (size + kTarBlock - 1) / kTarBlock * kTarBlock; }

// Header block of a regular file `name` (1..100 bytes, no NUL) of `size`
// bytes (< 8 GiB: 11 octal digits), mode 0644, uid/gid 0, mtime 0 (so the
// same input gives the same archive bytes). Throws std::invalid_argument
// for a name or size that does not fit.
std::string ustar_header(const std::string& name, uint64_t size);

// A parsed header. `ok` false (with `why`) for a block that is not a valid
// ustar header: bad checksum, missing "ustar" magic, non-octal size.
struct UstarEntry {
  bool ok = false;
  std::string why;
  std::string name;   // prefix + "/" + name when prefix is set
  char type = 0;      // typeflag ('0' or NUL: regular file)
  uint64_t size = 0;  // data bytes
};
UstarEntry parse_ustar_header(const uint8_t* block);

// True when all 512 bytes are zero (an end-of-archive block).
bool is_zero_block(const uint8_t* block);

}  // namespace vt
