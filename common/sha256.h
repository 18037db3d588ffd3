// SHA-256 digests as lowercase hex (OpenSSL underneath).
#pragma once

#include <string>
#include <string_view>

namespace onset::common {

// The 64-digit lowercase hex SHA-256 of `data`. Thread-safe.
std::string Sha256Hex(std::string_view data);

}  // namespace onset::common
