// Where the CLI finds the coordinator, and the token of an `onset run` coordinator; or, once
// that run has ended, the database it left in its data directory.
#pragma once

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "common/auth_token.h"

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

// Whether the coordinator is the one <data_dir>/coordinator.addr names: no flag, no env, and the
// file exists.
bool FollowsAddressFile(const std::string& flag, const char* env, const std::string& data_dir);

// The token file to fall back on: <data_dir>/onsetd.token when the address comes from
// <data_dir>/coordinator.addr (FollowsAddressFile), so that `onset status` next to a running
// `onset run` needs no set-up; empty otherwise, so that this token is never sent to a
// coordinator named some other way.
std::string DefaultTokenFile(const std::string& flag, const char* env, const std::string& data_dir);

// The token sources of a client whose coordinator is resolved from `flag`, `env` and
// `data_dir`. When it follows the address file, only <data_dir>/onsetd.token: ONSET_TOKEN,
// ONSET_TOKEN_FILE and --token-file are meant for a coordinator the user named, and never go to
// an address that a file in the working directory suggests. Otherwise the flag and the
// environment (common::TokenSources::FromEnvironment) with no default file.
common::TokenSources ClientTokenSources(const std::string& token_flag, const std::string& flag,
                                        const char* env, const std::string& data_dir);

// Whether a coordinator serves <data_dir>/onset.db now: the database's lock is held
// (base::LockHeld). A coordinator holds that lock while it runs, and the kernel drops it when
// the coordinator dies, so a live holder still owns the port it wrote in coordinator.addr.
bool DataDirServed(const std::string& data_dir);

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
// given: a call there says what is wrong); the address in <data_dir>/coordinator.addr when it is
// a loopback address, `served()` says the coordinator that wrote it is alive (DataDirServed) and
// it answers; <data_dir>/onset.db when that file exists (the `onset run` has ended, or died and
// left a stale address file); kDefaultAddress when there was no address file and it answers;
// else nothing, with stale_address set. An address file that is not followed is never probed,
// so whatever listens at its address now (another user's process, after the run died) is never
// sent anything. `answers` and `served` are called at most once.
DataSource ResolveDataSource(const std::string& flag, const char* env, const std::string& data_dir,
                             const std::function<bool(const std::string& address)>& answers,
                             const std::function<bool()>& served);
inline DataSource ResolveDataSource(
    const std::string& flag, const char* env, const std::string& data_dir,
    const std::function<bool(const std::string& address)>& answers) {
  return ResolveDataSource(flag, env, data_dir, answers, [&] { return DataDirServed(data_dir); });
}

}  // namespace onset::cli
