#include "data_pipeline/ustar.h"

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace vt {

namespace {

void put_octal(char* field, size_t len, uint64_t v) {
  // len - 1 digits, zero-padded, then NUL (as Python's tarfile itn()).
  std::snprintf(field, len, "%0*llo", static_cast<int>(len - 1), static_cast<unsigned long long>(v));
}

uint32_t header_checksum(const uint8_t* b) {
  uint32_t sum = 0;
  for (size_t i = 0; i < kTarBlock; ++i) sum += (i >= 148 && i < 156) ? ' ' : b[i];
  return sum;
}

// Octal field: optional leading spaces, digits, then NUL/space padding.
bool get_octal(const uint8_t* field, size_t len, uint64_t* out) {
  size_t i = 0;
  while (i < len && field[i] == ' ') ++i;
  uint64_t v = 0;
  size_t digits = 0;
  for (; i < len && field[i] >= '0' && field[i] <= '7'; ++i, ++digits) v = v * 8 + (field[i] - '0');
  for (; i < len; ++i)
    if (field[i] != 0 && field[i] != ' ') return false;
  if (digits == 0) return false;
  *out = v;
  return true;
}

std::string cstr(const uint8_t* field, size_t len) {
  size_t n = 0;
  while (n < len && field[n]) ++n;
  return std::string(reinterpret_cast<const char*>(field), n);
}

}  // namespace

std::string ustar_header(const std::string& name, uint64_t size) {
  if (name.empty() || name.size() > 100 || name.find('\0') != std::string::npos)
    throw std::invalid_argument("ustar: member name '" + name + "' must be 1..100 bytes");
  if (size >= (uint64_t{1} << 33)) throw std::invalid_argument("ustar: member '" + name + "' is 8 GiB or larger");
  std::string h(kTarBlock, '\0');
  char* b = h.data();
  std::memcpy(b, name.data(), name.size());
  put_octal(b + 100, 8, 0644);
  put_octal(b + 108, 8, 0);
  put_octal(b + 116, 8, 0);
  put_octal(b + 124, 12, size);
  put_octal(b + 136, 12, 0);
  b[156] = '0';
  std::memcpy(b + 257, "ustar", 6);  // with its NUL
  std::memcpy(b + 263, "00", 2);
  // chksum: 6 octal digits, NUL, space (POSIX; tarfile writes the same).
  std::snprintf(b + 148, 8, "%06o", header_checksum(reinterpret_cast<const uint8_t*>(b)));
  b[155] = ' ';
  return h;
}

UstarEntry parse_ustar_header(const uint8_t* b) {
  UstarEntry e;
  uint64_t sum = 0;
  if (!get_octal(b + 148, 8, &sum)) {
    e.why = "no checksum field (not a tar header)";
    return e;
  }
  if (sum != header_checksum(b)) {
    e.why = "header checksum mismatch (not a tar header, or a damaged one)";
    return e;
  }
  if (std::memcmp(b + 257, "ustar", 5) != 0) {
    e.why = "no 'ustar' magic (a pre-POSIX tar header)";
    return e;
  }
  if (!get_octal(b + 124, 12, &e.size)) {
    e.why = "size field is not octal";
    return e;
  }
  e.type = static_cast<char>(b[156]);
  const std::string prefix = cstr(b + 345, 155);
  e.name = (prefix.empty() ? "" : prefix + "/") + cstr(b, 100);
  e.ok = true;
  return e;
}

bool is_zero_block(const uint8_t* b) {
  for (size_t i = 0; i < kTarBlock; ++i)
    if (b[i]) return false;
  return true;
}

}  // namespace vt
