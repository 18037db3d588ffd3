// The coordinator's read side over a database file that no coordinator serves: StudyService on a
// gRPC server of this process (on a loopback port of its own, reached through channel(); calls
// need the token, which the caller makes and keeps) and, when asked, the dashboard, both over a
// read-only SqliteStore. The CLI's read commands use it when no running `onset run` answers for
// ./onset-data, and `onset dashboard` serves the page with it.
//
// Nothing is written: no migration, no lease sweeping, no token file, and every write RPC fails
// with FAILED_PRECONDITION (on a scratch database, config.scratch, writes land in memory and are
// gone with the server). A coordinator may start on the same file meanwhile (WAL: neither waits
// for the other); reads then see its commits, and watches and log follows see them as they come.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace onset::coordinator {

struct ReadOnlyServerConfig {
  std::string db_path;  // an existing database file at this binary's schema version
  // Instead of db_path: an empty database in this process's memory, which the services may write
  // (nothing is kept when the server ends). `onset check` previews a study file on it exactly as
  // onsetd would, with no coordinator anywhere.
  bool scratch = false;
  // Plan studies as a coordinator whose checkpoints every worker sees (onsetd --checkpoint-root,
  // `onset run`): WSD budgets then share trunks. Only a scratch database is ever planned on.
  bool shared_checkpoints = false;
  // Where the database's coordinator kept its checkpoints (`onset run`: DATA/checkpoints), for
  // the paths DescribeCell names; "" when unknown.
  std::string checkpoint_root;
  // Every call, gRPC and the dashboard's /api/, must carry it (common/auth_token.h rules).
  std::string token;
  // The dashboard (dashboard_api.h) over plain HTTP on this loopback host:port (port 0 picks a
  // free one); empty: none. Other hosts are refused: the token would cross the network in clear.
  std::string http_listen;
};

class ReadOnlyServer {
 public:
  // Opens the database read-only and starts serving.
  // Errors: InvalidArgument for a bad token or a --http address that is not loopback; NotFound
  // when the database file does not exist; FailedPrecondition when its schema version is not this
  // binary's (the message says what to do); Unavailable when a port cannot be bound.
  static absl::StatusOr<std::unique_ptr<ReadOnlyServer>> Start(const ReadOnlyServerConfig& config);

  virtual ~ReadOnlyServer() = default;

  // A channel to the StudyService of this server; every call on it carries the token.
  // Thread-safe; calls after Shutdown() fail with UNAVAILABLE.
  virtual std::shared_ptr<grpc::Channel> channel() = 0;

  // The dashboard's "host:port" actually bound, empty when it is off.
  virtual const std::string& http_address() const = 0;

  // Ends open watches and log follows, stops serving and closes the database. Idempotent;
  // thread-safe; also run by the destructor of the implementation.
  virtual void Shutdown() = 0;
};

}  // namespace onset::coordinator
