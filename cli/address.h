// Where the CLI finds the coordinator, and the token of an `onset run` coordinator; or, once
// that run has ended, the database it left in its data directory.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"

namespace onset::cli {

// The file `onset run` writes its embedded coordinator's address to, inside its data directory.
inline constexpr char kAddressFileName[] = "coordinator.addr";
inline constexpr char kDefaultAddress[] = "127.0.0.1:7070";
inline constexpr char kDefaultDataDir[] = "onset-data";
// The database `onset run` keeps inside its data directory.
inline constexpr char kDatabaseFileName[] = "onset.db";

// First of: `flag` when non-empty; `env` (the value of ONSET_COORDINATOR, may be null) when
// non-empty; the first line of <data_dir>/coordinator.addr when that file exists and is not
// empty; kDefaultAddress.
std::string ResolveCoordinatorAddress(const std::string& flag, const char* env,
                                      const std::string& data_dir);

// Writes `address` and a newline to <data_dir>/coordinator.addr, atomically: a reader never sees
// part of an address. An error naming the file and what failed.
absl::Status WriteAddressFile(const std::string& data_dir, const std::string& address);

// The token file to fall back on: <data_dir>/onsetd.token when the address comes from
// <data_dir>/coordinator.addr (no flag, no env, the file exists), so that `onset status` next to
// a running `onset run` needs no set-up; empty otherwise, so that this token is never sent to a
// coordinator named some other way.
std::string DefaultTokenFile(const std::string& flag, const char* env, const std::string& data_dir);

// Where a subcommand's calls go: a coordinator, or a database read in this process.
struct DataSource {
  std::string address;   // the coordinator's host:port
  std::string database;  // <data_dir>/onset.db, read without a coordinator
  // When neither is set nothing answered: the address of a stale coordinator.addr, or empty when
  // there was no address file (and nothing answered at kDefaultAddress either).
  std::string stale_address;
};

// Like ResolveCoordinatorAddress, but an address that only a file or the default suggests counts
// only when `answers(address)` says a coordinator is there. First of: `flag`; `env` (both as
// given: a call there says what is wrong); the address in <data_dir>/coordinator.addr when it
// answers; <data_dir>/onset.db when that file exists (the `onset run` has ended, or died and left
// a stale address file); kDefaultAddress when there was no address file and it answers; else
// nothing, with stale_address set. `answers` is called at most once.
DataSource ResolveDataSource(const std::string& flag, const char* env, const std::string& data_dir,
                             const std::function<bool(const std::string& address)>& answers);

}  // namespace onset::cli
