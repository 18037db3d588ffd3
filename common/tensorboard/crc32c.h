// CRC-32C (Castagnoli), the checksum of TensorBoard's record framing (event_file.h). Debian 12
// packages no CRC-32C library for C++ (zlib's crc32 is the IEEE polynomial), so it is computed
// here: the reflected polynomial 0x82F63B78, a byte table, as RFC 3720 (iSCSI) defines it.
#pragma once

#include <cstdint>
#include <string_view>

namespace onset::tensorboard {

// CRC-32C of `bytes`; Crc32c("123456789") == 0xE3069283.
uint32_t Crc32c(std::string_view bytes);

// The masked form a TFRecord stores: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t MaskedCrc32c(std::string_view bytes);

}  // namespace onset::tensorboard
