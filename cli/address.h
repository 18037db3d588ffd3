// Where the CLI finds the coordinator, and the token of an `onset run` coordinator.
#pragma once

#include <string>

namespace onset::cli {

// The file `onset run` writes its embedded coordinator's address to, inside its data directory.
inline constexpr char kAddressFileName[] = "coordinator.addr";
inline constexpr char kDefaultAddress[] = "127.0.0.1:7070";
inline constexpr char kDefaultDataDir[] = "onset-data";

// First of: `flag` when non-empty; `env` (the value of ONSET_COORDINATOR, may be null) when
// non-empty; the first line of <data_dir>/coordinator.addr when that file exists and is not
// empty; kDefaultAddress.
std::string ResolveCoordinatorAddress(const std::string& flag, const char* env,
                                      const std::string& data_dir);

// The token file to fall back on: <data_dir>/onsetd.token when the address comes from
// <data_dir>/coordinator.addr (no flag, no env, the file exists), so that `onset status` next to
// a running `onset run` needs no set-up; empty otherwise, so that this token is never sent to a
// coordinator named some other way.
std::string DefaultTokenFile(const std::string& flag, const char* env, const std::string& data_dir);

}  // namespace onset::cli
