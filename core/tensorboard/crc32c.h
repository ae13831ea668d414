// CRC32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of
// TFRecord framing, as defined in RFC 3720 sec. 12.1 and used by TensorFlow's
// tensorflow/core/lib/hash/crc32c.h. Table-driven, one byte per step: event
// files are small, so speed does not matter here.
#pragma once
#include <cstddef>
#include <cstdint>

namespace vt {

// CRC32C of n bytes (initial value ~0, final xor ~0). crc32c("123456789", 9)
// is 0xE3069283.
uint32_t crc32c(const void* data, size_t n);

// TensorFlow's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8. Masking
// keeps a CRC of data that itself contains CRCs from being degenerate.
uint32_t mask_crc32c(uint32_t crc);
inline uint32_t masked_crc32c(const void* data, size_t n) { return mask_crc32c(crc32c(data, n)); }

}  // namespace vt
