// SHA-256 (FIPS 180-4), written out here so that every program has the same one, the trainer
// included (it links no OpenSSL): cell ids (base/cell_id.h) and the comparison of tokens.
#pragma once

#include <string>
#include <string_view>

namespace onset::base {

// The 64-digit lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace onset::base
