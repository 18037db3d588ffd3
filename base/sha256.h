// SHA-256 (FIPS 180-4) for the trainer, which links neither OpenSSL nor onset_common: the
// exported weights name their cell the way the coordinator does (coordinator/grid.h).
#pragma once

#include <string>
#include <string_view>

namespace onset::base {

// The 64-digit lowercase hex SHA-256 of `data`.
std::string Sha256Hex(std::string_view data);

}  // namespace onset::base
