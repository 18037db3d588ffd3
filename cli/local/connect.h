// Connecting a subcommand to its studies: the coordinator that --coordinator, ONSET_COORDINATOR or
// a running `onset run` (coordinator.addr in its data directory, cli/commands/command.h: DataDir)
// names; or, when no `onset run` answers there and the data directory holds a database, that
// database read in this process, through the coordinator's own StudyService over a read-only store
// (coordinator/server/read_only_server.h), so that every command prints exactly what it printed
// while the run was going.
#pragma once

#include <chrono>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "cli/client/address.h"
#include "cli/client/study_client.h"
#include "common/client_security.h"
#include "coordinator/server/read_only_server.h"

namespace onset::cli {

struct ConnectOptions {
  std::string coordinator;    // --coordinator; may be empty
  const char* env = nullptr;  // the value of ONSET_COORDINATOR; may be null
  std::string data_dir = kDefaultDataDir;
  common::ClientSecurity security;  // for a coordinator (a local database needs none)
  // The subcommand, e.g. "cancel", when it changes studies (submit, cancel, rerun): those need a
  // coordinator, and a database without one is an error. Empty for a command that only reads.
  std::string writer;
  // Why the writer needs a coordinator, for that error.
  std::string writer_needs = "changes studies, which only a coordinator does";
  // How long the address in coordinator.addr has to answer before it counts as stale (a refused
  // connection fails at once).
  std::chrono::milliseconds probe_timeout{1000};
};

// What a subcommand talks to. `client` is destroyed before `local`, which it may call into.
struct StudyConnection {
  std::unique_ptr<coordinator::ReadOnlyServer> local;  // set when reading the database here
  std::unique_ptr<StudyClient> client;
  bool reads_database() const { return local != nullptr; }
};

// Resolves where the calls go (cli/client/address.h: ResolveDataSource) and connects there. Reading
// a database writes one line to `err` saying which file (never to stdout, which may carry --json).
// Errors, each meaning exit code 1 (cli/exit_codes.h), their messages saying what to do:
// Unavailable when nothing is there (no coordinator answers at the address file's address or,
// without one, at kDefaultAddress, and data_dir holds no database), and for a writer when no
// coordinator answers for data_dir but its database is there; those of
// coordinator::ReadOnlyServer::Start for the database (FailedPrecondition when its schema is not
// this binary's).
absl::StatusOr<StudyConnection> Connect(const ConnectOptions& options, std::ostream& err);

// DATA/checkpoints, made absolute: where `onset run` keeps every cell's checkpoints (the trainers
// and the exports read it from other working directories).
std::string DataDirCheckpointRoot(const std::string& data_dir);

// A connection to the coordinator's own StudyService over an empty database in this process's
// memory (coordinator::ReadOnlyServerConfig::scratch): what a study file gives, planned as
// `onset run` and an onsetd with --checkpoint-root plan it (WSD budgets share trunks), with
// nothing stored and no coordinator anywhere.
absl::StatusOr<StudyConnection> ConnectScratch();

}  // namespace onset::cli
